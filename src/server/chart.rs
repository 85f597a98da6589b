//! Bar charts as SVG text, for the web page (`GET /v1/money/chart.svg`)
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

/// Text made safe for XML 1.0 content and attribute values, whatever it
/// holds: the markup characters as entities; tab, newline and carriage
/// return as character references, which a parser keeps as they are (written
/// raw, it turns them into spaces in an attribute and a lone CR into LF in
/// text); and a character XML 1.0 allows nowhere (a C0 control other than
/// those three, U+FFFE, U+FFFF) as U+FFFD, the replacement character.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' => out.push_str("&#9;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\u{0}'..='\u{1F}' | '\u{FFFE}' | '\u{FFFF}' => out.push('\u{FFFD}'),
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
pub(crate) mod tests {
    use proptest::prelude::*;

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

    /// XML 1.0's `Char` production, written out here as the specification has it.
    fn xml_char(c: char) -> bool {
        matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
    }

    /// What a parser should read back of `text`: itself, each character XML
    /// forbids replaced.
    pub(crate) fn kept(text: &str) -> String {
        text.chars().map(|c| if xml_char(c) { c } else { '\u{FFFD}' }).collect()
    }

    /// `svg` parsed by a real XML parser, or why it is not well-formed.
    pub(crate) fn parse(svg: &str) -> Result<roxmltree::Document<'_>, TestCaseError> {
        roxmltree::Document::parse(svg).map_err(|e| TestCaseError::fail(format!("not well-formed XML ({e}): {svg:?}")))
    }

    /// The `data-label` of each bar of a parsed chart.
    pub(crate) fn labels_of(doc: &roxmltree::Document<'_>) -> Vec<String> {
        doc.descendants().filter_map(|n| n.attribute("data-label")).map(str::to_string).collect()
    }

    /// Text that is hard on XML: any Unicode string, or one made of control
    /// characters, the noncharacters XML forbids and markup.
    pub(crate) fn awkward_text() -> impl Strategy<Value = String> {
        let hard = prop_oneof![
            (0u32..0x20).prop_filter_map("a C0 control", char::from_u32),
            Just('\u{7F}'),
            Just('\u{85}'),
            Just('\u{FFFE}'),
            Just('\u{FFFF}'),
            Just('\u{FFFD}'),
            proptest::sample::select(vec!['&', '<', '>', '"', '\'', ']', ';', '#', ' ']),
            any::<char>(),
        ];
        prop_oneof![any::<String>(), proptest::collection::vec(hard, 0..24).prop_map(String::from_iter)]
    }

    /// The parsed chart, or a test failure.
    fn parsed_labels(svg: &str) -> Vec<String> {
        let doc = parse(svg).unwrap_or_else(|e| panic!("{e}"));
        labels_of(&doc)
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
        assert_eq!(escape("a\u{1}b\u{FFFF}"), "a\u{FFFD}b\u{FFFD}", "characters XML forbids are replaced");
        assert_eq!(escape("a\tb\r\n"), "a&#9;b&#13;&#10;", "kept as they are, even in an attribute");
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

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn escaped_text_reads_back_as_itself_in_text_and_in_attributes(text in awkward_text()) {
            let e = escape(&text);
            let xml = format!("<r a=\"{e}\" b='{e}'>{e}</r>");
            let doc = parse(&xml)?;
            let root = doc.root_element();
            let want = kept(&text);
            prop_assert_eq!(root.attribute("a"), Some(want.as_str()));
            prop_assert_eq!(root.attribute("b"), Some(want.as_str()));
            prop_assert_eq!(root.children().filter_map(|n| n.text()).collect::<String>(), want);
        }

        #[test]
        fn every_chart_is_well_formed_xml_and_keeps_its_text(
            title in awkward_text(),
            currency in awkward_text(),
            labels in proptest::collection::vec(awkward_text(), 1..6),
        ) {
            let bars: Vec<Bar> = labels.iter().zip(1..).map(|(l, i)| Bar::new(l.clone(), 100 * i)).collect();
            let svg = bar_chart(&title, &currency, &bars, "#1f6feb");
            let doc = parse(&svg)?;
            let root = doc.root_element();
            prop_assert_eq!(root.attribute("aria-label").map(str::to_string), Some(kept(&title)));
            prop_assert_eq!(labels_of(&doc), labels.iter().map(|l| kept(l)).collect::<Vec<_>>());
            let tips: Vec<String> = doc
                .descendants()
                .filter(|n| n.has_tag_name("rect"))
                .filter_map(|r| r.first_element_child())
                .map(|t| t.children().filter_map(|n| n.text()).collect())
                .collect();
            let want: Vec<String> =
                bars.iter().map(|b| format!("{}: {} {}", kept(&b.label), units(b.value), kept(&currency))).collect();
            prop_assert_eq!(tips, want);
        }
    }
}
