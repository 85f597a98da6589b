//! Bar charts as SVG text, for the web page (`GET /v1/ledger/chart.svg`)
//! and the CLI (`switchboard ask --out`). Pure: bars in, a standalone SVG
//! document out. Values are integer cents; only the geometry is floating point.

use std::fmt::Write as _;

/// One bar: its label and its value in cents (negative values are drawn as 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bar {
    /// What the bar stands for (a category, a month).
    pub label: String,
    /// Cents.
    pub value: i64,
}

impl Bar {
    /// A bar of `value` cents.
    pub fn new(label: impl Into<String>, value: i64) -> Self {
        Self { label: label.into(), value }
    }
}

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 320.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 76.0;
const SIDE: f64 = 16.0;
/// The tallest bar's height; every other bar is in proportion to it.
pub const PLOT_HEIGHT: f64 = HEIGHT - TOP - BOTTOM;
const LABEL_CHARS: usize = 16;

/// Text made safe for XML content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // not allowed in XML 1.0 at all
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Cents as currency units with two decimals, exactly (`8103` → `81.03`).
pub fn units(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let abs = cents.unsigned_abs();
    format!("{sign}{}.{:02}", abs / 100, abs % 100)
}

fn shorten(label: &str) -> String {
    if label.chars().count() <= LABEL_CHARS {
        return label.to_string();
    }
    let mut s: String = label.chars().take(LABEL_CHARS - 1).collect();
    s.push('…');
    s
}

/// A bar chart titled `title`: one `<rect class="bar">` per bar, in order,
/// each as tall as its value in proportion to the largest, with its label
/// under it and its amount above it. `data-value` holds the cents.
pub fn bar_chart(title: &str, currency: &str, bars: &[Bar], color: &str) -> String {
    let mut svg = String::new();
    let _ = write!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" width=\"{WIDTH}\" \
         height=\"{HEIGHT}\" role=\"img\" aria-label=\"{t}\" font-family=\"system-ui, sans-serif\" font-size=\"11\">\
         <title>{t}</title><text x=\"{SIDE}\" y=\"22\" font-size=\"14\" font-weight=\"600\" fill=\"#57606a\">{t}</text>",
        t = escape(title)
    );
    let base = HEIGHT - BOTTOM;
    let _ = write!(
        svg,
        "<line x1=\"{SIDE}\" y1=\"{base}\" x2=\"{x2}\" y2=\"{base}\" stroke=\"#8c959f\" stroke-width=\"1\"/>",
        x2 = WIDTH - SIDE
    );
    let max = bars.iter().map(|b| b.value).max().unwrap_or(0);
    if bars.is_empty() || max <= 0 {
        let _ = write!(
            svg,
            "<text x=\"{x}\" y=\"{y}\" text-anchor=\"middle\" fill=\"#57606a\">Nothing spent yet</text></svg>",
            x = WIDTH / 2.0,
            y = TOP + PLOT_HEIGHT / 2.0
        );
        return svg;
    }
    let slot = (WIDTH - 2.0 * SIDE) / bars.len() as f64;
    let width = (slot * 0.7).clamp(1.0, 72.0);
    let tilt = bars.len() > 6;
    let currency = escape(currency);
    for (i, bar) in bars.iter().enumerate() {
        let value = bar.value.max(0);
        let h = PLOT_HEIGHT * value as f64 / max as f64;
        let x = SIDE + slot * i as f64 + (slot - width) / 2.0;
        let mid = x + width / 2.0;
        let label = escape(&bar.label);
        let _ = write!(
            svg,
            "<g><rect class=\"bar\" x=\"{x:.2}\" y=\"{y:.2}\" width=\"{width:.2}\" height=\"{h:.2}\" fill=\"{color}\" \
             data-label=\"{label}\" data-value=\"{value}\"><title>{label}: {amount} {currency}</title></rect>\
             <text x=\"{mid:.2}\" y=\"{ty:.2}\" text-anchor=\"middle\" fill=\"#57606a\">{amount}</text>",
            y = base - h,
            amount = units(value),
            ty = base - h - 4.0,
            color = escape(color),
        );
        let short = escape(&shorten(&bar.label));
        let ly = base + 14.0;
        if tilt {
            let _ = write!(
                svg,
                "<text x=\"{mid:.2}\" y=\"{ly}\" text-anchor=\"end\" transform=\"rotate(-35 {mid:.2} {ly})\" \
                 fill=\"#57606a\">{short}</text></g>"
            );
        } else {
            let _ = write!(
                svg,
                "<text x=\"{mid:.2}\" y=\"{ly}\" text-anchor=\"middle\" fill=\"#57606a\">{short}</text></g>"
            );
        }
    }
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(label, height)` of every bar, read back from the SVG text.
    fn bars_of(svg: &str) -> Vec<(String, f64)> {
        svg.split("<rect class=\"bar\"")
            .skip(1)
            .map(|rest| {
                let attr = |name: &str| {
                    let from = rest.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
                    rest[from..from + rest[from..].find('"').unwrap()].to_string()
                };
                (attr("data-label"), attr("height").parse().unwrap())
            })
            .collect()
    }

    #[test]
    fn bar_heights_are_proportional_to_the_totals() {
        let bars = [Bar::new("Rent", 145_000), Bar::new("Groceries", 46_808), Bar::new("Coffee", 7_250)];
        let svg = bar_chart("By category", "USD", &bars, "#1f6feb");
        let drawn = bars_of(&svg);
        assert_eq!(drawn.len(), 3);
        assert!((drawn[0].1 - PLOT_HEIGHT).abs() < 0.01, "the largest bar fills the plot: {drawn:?}");
        for ((label, h), bar) in drawn.iter().zip(&bars) {
            assert_eq!(label, &bar.label);
            let expected = PLOT_HEIGHT * bar.value as f64 / 145_000.0;
            assert!((h - expected).abs() < 0.01, "{label}: {h} vs {expected}");
        }
        assert!(svg.contains(">1450.00<") && svg.contains(">468.08<") && svg.contains(">72.50<"), "{svg}");
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\"") && svg.ends_with("</svg>"));
    }

    #[test]
    fn labels_and_the_title_are_escaped() {
        let svg = bar_chart(
            "Tom & Jerry's <spending>",
            "U\"SD",
            &[Bar::new("<script>alert(1)</script> & \"co\"", 500)],
            "red",
        );
        assert!(!svg.contains("<script>"), "{svg}");
        assert!(svg.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;co&quot;"), "{svg}");
        assert!(svg.contains("Tom &amp; Jerry&apos;s &lt;spending&gt;"), "{svg}");
        assert!(svg.contains("U&quot;SD"), "{svg}");
        assert_eq!(escape("a\u{1}b"), "a\u{FFFD}b", "control characters are not XML");
    }

    /// XML 1.0's `Char` production, written out here as the specification has it.
    fn xml_char(c: char) -> bool {
        matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
    }

    /// The chart parsed by a real XML parser, and the `data-label` of each bar.
    fn parsed_labels(svg: &str) -> Vec<String> {
        let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("not well-formed XML ({e}): {svg:?}"));
        doc.descendants().filter_map(|n| n.attribute("data-label")).map(str::to_string).collect()
    }

    #[test]
    fn a_label_with_characters_xml_forbids_still_makes_a_well_formed_chart() {
        for label in ["a\u{FFFE}b", "a\u{FFFF}b", "a\u{1}b\u{1f}", "tab\there", "line\r\nbreak\rcr"] {
            let svg = bar_chart("By category", "USD", &[Bar::new(label, 100)], "red");
            let kept: String = label.chars().map(|c| if xml_char(c) { c } else { '\u{FFFD}' }).collect();
            assert_eq!(parsed_labels(&svg), [kept], "{label:?}");
        }
    }

    #[test]
    fn no_bars_or_nothing_positive_is_an_empty_chart_not_a_division_by_zero() {
        for bars in [vec![], vec![Bar::new("Refund", -500), Bar::new("Zero", 0)]] {
            let svg = bar_chart("By month", "USD", &bars, "green");
            assert!(bars_of(&svg).is_empty(), "{svg}");
            assert!(svg.contains("Nothing spent yet"));
        }
        // a negative bar among positive ones is drawn flat
        let drawn = bars_of(&bar_chart("x", "USD", &[Bar::new("a", 100), Bar::new("b", -100)], "red"));
        assert_eq!(drawn[1].1, 0.0);
    }

    #[test]
    fn units_are_exact_with_two_decimals() {
        assert_eq!(units(8103), "81.03");
        assert_eq!(units(5), "0.05");
        assert_eq!(units(-320_000), "-3200.00");
        assert_eq!(units(i64::MIN), "-92233720368547758.08");
    }

    #[test]
    fn long_labels_are_shortened_on_the_axis_but_whole_in_the_tooltip() {
        let label = "A very long merchant category name";
        let svg = bar_chart("x", "USD", &[Bar::new(label, 1)], "red");
        assert!(svg.contains(&format!("data-label=\"{label}\"")));
        assert!(svg.contains(">A very long mer…<"), "{svg}");
    }
}
