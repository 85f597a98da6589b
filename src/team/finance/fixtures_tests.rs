//! Inputs as people give them (tests/fixtures/finance): pasted receipts, bank
//! CSV exports, OFX/QFX downloads and PDFs, each checked field by field
//! against values worked out by hand from the file.

use super::document::{self, DocumentError};
use super::transactions::{Extracted, Source, from_text};

/// The default `[limits] max_input_bytes`.
const LIMIT: usize = 256 * 1024;

macro_rules! fixture {
    ($name:literal) => {
        include_str!(concat!("../../../tests/fixtures/finance/", $name))
    };
}
macro_rules! fixture_bytes {
    ($name:literal) => {
        include_bytes!(concat!("../../../tests/fixtures/finance/", $name))
    };
}

/// date (`""` for none), merchant, amount in cents (positive is spent), currency.
type Row = (&'static str, &'static str, i64, &'static str);

fn rows(found: &Extracted) -> Vec<(String, String, i64, String)> {
    found
        .transactions
        .iter()
        .map(|t| {
            let date = t.date.map(|d| d.format("%Y-%m-%d").to_string()).unwrap_or_default();
            (date, t.merchant.clone(), t.amount, t.currency.clone())
        })
        .collect()
}

fn assert_statement(text: &str, source: Source, want: &[Row]) -> Extracted {
    let found = from_text(text);
    assert_eq!(found.source, Some(source), "{:?}", rows(&found));
    let want: Vec<(String, String, i64, String)> =
        want.iter().map(|(d, m, a, c)| (d.to_string(), m.to_string(), *a, c.to_string())).collect();
    assert_eq!(rows(&found), want);
    assert_eq!(found.skipped_rows, 0);
    found
}

/// What a receipt should hold: merchant, date, currency, total, (subtotal,
/// tax, tip) and items as (description, quantity, cents).
type Want = (
    &'static str,
    &'static str,
    &'static str,
    i64,
    (Option<i64>, Option<i64>, Option<i64>),
    &'static [(&'static str, u32, i64)],
);

fn assert_receipts(text: &str, want: &[Want]) {
    let found = from_text(text);
    assert_eq!(found.source, Some(Source::Receipts), "{:?}", rows(&found));
    assert_eq!(found.receipts.len(), want.len(), "{:#?}", found.receipts);
    for (r, (merchant, date, currency, total, extras, items)) in found.receipts.iter().zip(want) {
        assert_eq!(r.merchant, *merchant);
        assert_eq!(r.date.map(|d| d.format("%Y-%m-%d").to_string()).unwrap_or_default(), *date, "{merchant}");
        assert_eq!(r.currency, *currency, "{merchant}");
        assert_eq!(r.total, *total, "{merchant}");
        assert_eq!((r.subtotal, r.tax, r.tip), *extras, "{merchant}: subtotal, tax, tip");
        let got: Vec<(&str, u32, i64)> =
            r.items.iter().map(|i| (i.description.as_str(), i.quantity, i.amount)).collect();
        assert_eq!(got, *items, "{merchant}");
    }
    // Each receipt is one transaction of its total.
    let totals: Vec<(&str, i64)> = found.transactions.iter().map(|t| (t.merchant.as_str(), t.amount)).collect();
    assert_eq!(totals, want.iter().map(|w| (w.0, w.3)).collect::<Vec<_>>());
}

const NONE3: (Option<i64>, Option<i64>, Option<i64>) = (None, None, None);

// Pasted receipts, one per message.

#[test]
fn fixture_receipt_pasted_after_heres_my_receipt_on_the_same_line() {
    let items = &[("COPY PAPER 8.5X11 CASE", 1, 4299), ("PILOT G2 PENS 12PK", 1, 1549), ("STICKY NOTES", 2, 1598)];
    let want: Want = ("Office Depot", "2025-10-14", "USD", 8103, (Some(7446), Some(657), None), items);
    assert_receipts(fixture!("receipt_pasted_same_line.txt"), &[want]);
}

#[test]
fn fixture_receipt_flattened_onto_one_line_by_the_chat_box() {
    let items = &[("COPY PAPER", 1, 4299), ("PENS 12PK", 1, 1549)];
    let want: Want = ("Office Depot", "2025-10-14", "USD", 6367, (Some(5848), Some(519), None), items);
    assert_receipts(fixture!("receipt_one_line_paste.txt"), &[want]);
}

#[test]
fn fixture_receipt_pasted_after_a_line_of_chat_with_a_quantity_line() {
    let items = &[
        ("BANANAS", 1, 114),
        ("ORGANIC MILK HALF GAL", 1, 449),
        ("MANDARIN ORANGE CHICKEN", 2, 798),
        ("DARK CHOCOLATE BAR", 1, 199),
    ];
    assert_receipts(
        fixture!("receipt_pasted_line_before.txt"),
        &[("Trader Joe's", "2025-11-02", "USD", 1560, NONE3, items)],
    );
}

#[test]
fn fixture_receipt_restaurant_with_tax_and_tip() {
    let items = &[("Cheese Slice", 2, 700), ("Pepperoni Slice", 1, 425), ("Garlic Knots", 1, 550), ("Coke", 2, 500)];
    let want: Want = ("Joe's Pizza", "2025-11-08", "USD", 2768, (Some(2175), Some(193), Some(400)), items);
    assert_receipts(fixture!("receipt_restaurant_tip.txt"), &[want]);
}

#[test]
fn fixture_receipt_uk_pounds_day_first_and_a_vat_table() {
    let items = &[("MEAL DEAL", 1, 385), ("SEMI SKIMMED MILK 2PT", 1, 145), ("BREAD WHOLEMEAL 800G", 1, 110)];
    assert_receipts(fixture!("receipt_uk_vat.txt"), &[("Tesco", "2025-11-03", "GBP", 640, NONE3, items)]);
}

#[test]
fn fixture_receipt_german_decimal_commas_and_summe() {
    let items =
        &[("BIO BANANEN", 1, 179), ("VOLLMILCH 3,5%", 1, 119), ("SPAGHETTI", 1, 99), ("ROTWEIN TROCKEN", 1, 499)];
    assert_receipts(fixture!("receipt_german_eur.txt"), &[("REWE Markt GmbH", "2025-11-05", "EUR", 896, NONE3, items)]);
}

#[test]
fn fixture_receipt_canadian_dollars_with_hst() {
    let items = &[("Medium Double Double", 1, 229), ("Everything Bagel", 1, 219), ("10 Timbits", 1, 349)];
    let want: Want = ("Tim Hortons", "2025-10-21", "CAD", 901, (Some(797), Some(104), None), items);
    assert_receipts(fixture!("receipt_canada_gst.txt"), &[want]);
}

#[test]
fn fixture_receipt_pasted_in_a_code_block() {
    let items = &[("ADVIL 50CT", 1, 999), ("CVS VITAMIN D 1000IU", 1, 749)];
    let want: Want = ("Walgreens", "2025-09-30", "USD", 1929, (Some(1748), Some(181), None), items);
    assert_receipts(fixture!("receipt_in_code_block.txt"), &[want]);
}

#[test]
fn fixture_receipt_from_an_order_email() {
    let items =
        &[("Burrito Bowl", 1, 1045), ("Chips & Guacamole", 1, 495), ("Mexican Coke", 1, 325), ("Service fee", 1, 150)];
    let want: Want = ("Chipotle", "2025-10-17", "USD", 2461, (Some(1865), Some(166), Some(280)), items);
    assert_receipts(fixture!("receipt_email_order.txt"), &[want]);
}

// Several receipts in one message.

#[test]
fn fixture_receipts_separated_by_blank_lines() {
    let starbucks = &[("Grande Latte", 1, 545), ("Butter Croissant", 1, 395)];
    assert_receipts(
        fixture!("receipts_two_blank_lines.txt"),
        &[
            ("Starbucks", "2025-10-20", "USD", 1036, (Some(940), Some(96), None), starbucks),
            ("Shell", "2025-10-20", "USD", 4357, NONE3, &[("Regular Unleaded 11.2 gal", 1, 4357)]),
        ],
    );
}

#[test]
fn fixture_receipts_separated_by_dashes() {
    let cvs = &[("Sunscreen SPF 50", 1, 1199), ("Water 24pk", 1, 599)];
    assert_receipts(
        fixture!("receipts_three_dashes.txt"),
        &[
            ("CVS Pharmacy", "2025-09-03", "USD", 1911, (Some(1798), Some(113), None), cvs),
            (
                "Uber",
                "2025-09-03",
                "USD",
                3125,
                (None, None, Some(500)),
                &[("Trip fare", 1, 2340), ("Booking fee", 1, 285)],
            ),
            ("Blue Bottle Coffee", "2025-09-04", "USD", 1100, NONE3, &[("Cappuccino", 2, 1100)]),
        ],
    );
}

#[test]
fn fixture_receipts_split_by_a_new_merchant_header_alone() {
    let whole_foods = &[("Organic Avocados 4 ct", 1, 699), ("Sourdough Loaf", 1, 549)];
    let safeway = &[("Eggs Large Dozen", 1, 429), ("Paper Towels 6pk", 1, 999)];
    assert_receipts(
        fixture!("receipts_new_header_no_gap.txt"),
        &[
            ("Whole Foods Market", "2025-10-11", "USD", 1248, NONE3, whole_foods),
            ("Safeway", "2025-10-12", "USD", 1520, (None, Some(92), None), safeway),
        ],
    );
}

#[test]
fn fixture_receipts_each_after_chat_and_a_rule_line() {
    let target = &[("HDMI Cable 6ft", 1, 1299), ("Dish Soap", 1, 349)];
    assert_receipts(
        fixture!("receipts_separator_lines.txt"),
        &[
            ("Panera Bread", "2025-10-22", "USD", 1508, NONE3, &[("You Pick Two", 1, 1179), ("Iced Tea", 1, 329)]),
            ("Target", "2025-10-23", "USD", 1780, (Some(1648), Some(132), None), target),
        ],
    );
}

// CSV bank statements.

#[test]
fn fixture_chase_checking_with_bom_crlf_and_a_details_column() {
    let found = assert_statement(
        fixture!("chase_checking.csv"),
        Source::Csv,
        &[
            ("2025-10-07", "Check", 15000, "USD"),
            ("2025-10-05", "Comcast Cable Comm", 8999, "USD"),
            ("2025-10-03", "Starbucks", 450, "USD"),
            ("2025-10-01", "Acme Corp Payroll", -250_000, "USD"),
        ],
    );
    assert_eq!(found.transactions[2].description, "STARBUCKS STORE 12345 SEATTLE WA            10/02");
}

#[test]
fn fixture_chase_credit_card_with_categories() {
    let found = assert_statement(
        fixture!("chase_credit_card.csv"),
        Source::Csv,
        &[
            ("2025-10-14", "Amazon", 3499, "USD"),
            ("2025-10-12", "Uber", 1872, "USD"),
            ("2025-10-10", "Payment Thank You-Mobile", -50000, "USD"),
            ("2025-10-09", "Sweetgreen Midtown", 1585, "USD"),
            ("2025-10-08", "Amazon", -1200, "USD"),
        ],
    );
    let categories: Vec<Option<&str>> = found.transactions.iter().map(|t| t.category.as_deref()).collect();
    assert_eq!(categories, [Some("Shopping"), Some("Travel"), None, Some("Food & Drink"), Some("Shopping")]);
}

#[test]
fn fixture_bank_of_america_with_a_summary_block_and_running_balance() {
    assert_statement(
        fixture!("bofa_checking.csv"),
        Source::Csv,
        &[
            ("2025-10-02", "Whole Foods Market", 8743, "USD"),
            ("2025-10-03", "Zelle Payment From Jane Doe", -15000, "USD"),
            ("2025-10-06", "Con Ed of NY", 11219, "USD"),
            ("2025-10-15", "Acme Corp", -200_000, "USD"),
            ("2025-10-20", "Rent Payment Oak Street Apts", 128_800, "USD"),
        ],
    );
}

#[test]
fn fixture_amex_positive_charges_and_negative_credits() {
    assert_statement(
        fixture!("amex.csv"),
        Source::Csv,
        &[
            ("2025-10-28", "Delta Air Lines", 41230, "USD"),
            ("2025-10-25", "Autopay Payment", -125_000, "USD"),
            ("2025-10-22", "Netflix", 1549, "USD"),
            ("2025-10-19", "Blue Bottle Coffee", 650, "USD"),
            ("2025-10-18", "Hotel Tonight", -3500, "USD"),
        ],
    );
}

#[test]
fn fixture_capital_one_debit_and_credit_columns() {
    assert_statement(
        fixture!("capital_one.csv"),
        Source::Csv,
        &[
            ("2025-10-02", "Trader Joe's", 5218, "USD"),
            ("2025-10-04", "Capital One Mobile Pymt", -30000, "USD"),
            ("2025-10-06", "Spotify USA", 1199, "USD"),
            ("2025-10-09", "Best Buy", 124_999, "USD"),
        ],
    );
}

#[test]
fn fixture_monzo_money_out_and_in_with_ambiguous_day_first_dates() {
    let found = assert_statement(
        fixture!("monzo.csv"),
        Source::Csv,
        &[
            ("2025-10-01", "Pret A Manger", 425, "GBP"),
            ("2025-10-03", "Acme Ltd", -215_000, "GBP"),
            ("2025-10-05", "Tesco", 2360, "GBP"),
            ("2025-10-09", "TfL", 280, "GBP"),
        ],
    );
    assert_eq!(found.transactions[2].description, "TESCO STORES 3217 LONDON GBR");
    assert_eq!(found.transactions[3].category.as_deref(), Some("Transport"));
}

#[test]
fn fixture_revolut_signed_amounts_with_times() {
    assert_statement(
        fixture!("revolut.csv"),
        Source::Csv,
        &[
            ("2025-10-01", "Top-Up by", -100_000, "EUR"),
            ("2025-10-02", "Starbucks", 420, "EUR"),
            ("2025-10-04", "Lidl", 3765, "EUR"),
            ("2025-10-06", "To Anna Schmidt", 5000, "EUR"),
            ("2025-10-08", "Bolt", 1240, "EUR"),
        ],
    );
}

#[test]
fn fixture_n26_ignores_foreign_currency_columns() {
    let found = assert_statement(
        fixture!("n26.csv"),
        Source::Csv,
        &[
            ("2025-10-01", "Edeka", 2345, "EUR"),
            ("2025-10-03", "Acme GmbH", -285_000, "EUR"),
            ("2025-10-05", "Starbucks London", 502, "EUR"),
        ],
    );
    assert_eq!(found.transactions[1].description, "Gehalt Oktober");
}

#[test]
fn fixture_german_bank_semicolons_and_decimal_commas() {
    let found = assert_statement(
        fixture!("german_bank.csv"),
        Source::Csv,
        &[
            ("2025-10-01", "Hausverwaltung Müller GmbH", 123_456, "EUR"),
            ("2025-10-02", "REWE Markt GmbH", 4510, "EUR"),
            ("2025-10-06", "Acme GmbH", -325_000, "EUR"),
            ("2025-10-08", "Deutsche Bahn AG", 8990, "EUR"),
            ("2025-10-10", "Stadtwerke München", 7200, "EUR"),
        ],
    );
    assert_eq!(found.transactions[0].description, "Miete Oktober 2025");
}

#[test]
fn fixture_sparkasse_export_in_windows_1252_with_two_digit_years() {
    let text = document::to_text("umsaetze.csv", fixture_bytes!("sparkasse_windows1252.csv"), LIMIT).expect("text");
    let found = assert_statement(
        &text,
        Source::Csv,
        &[
            ("2025-10-30", "Bäckerei Schäfer", 840, "EUR"),
            ("2025-10-28", "Acme GmbH", -325_000, "EUR"),
            ("2025-10-15", "Stadtwerke München", 7200, "EUR"),
            ("2025-10-02", "Telekom Deutschland GmbH", 3995, "EUR"),
        ],
    );
    assert_eq!(found.transactions[2].description, "Abschlag Strom Okt");
}

#[test]
fn fixture_french_bank_with_euro_signs_after_the_amount() {
    assert_statement(
        fixture!("french_bank_euro_symbol.csv"),
        Source::Csv,
        &[
            ("2025-09-28", "Loyer Octobre", 125_000, "EUR"),
            ("2025-10-01", "Salaire Acme", -248_015, "EUR"),
            ("2025-10-03", "Carrefour City", 2345, "EUR"),
            ("2025-10-05", "Fnac Paris", 104_999, "EUR"),
        ],
    );
}

#[test]
fn fixture_unquoted_thousands_in_a_comma_separated_file() {
    assert_statement(
        fixture!("credit_union_unquoted_thousands.csv"),
        Source::Csv,
        &[
            ("2025-10-01", "Payroll Acme Corp", -250_000, "USD"),
            ("2025-10-02", "Mortgage Payment", 184_520, "USD"),
            ("2025-10-04", "Kroger", 8712, "USD"),
            ("2025-10-09", "Tuition State Univ", 200_000, "USD"),
        ],
    );
}

#[test]
fn fixture_headerless_with_a_balance_column() {
    assert_statement(
        fixture!("headerless_balance.csv"),
        Source::Csv,
        &[
            ("2025-10-03", "Starbucks", 450, "USD"),
            ("2025-10-04", "Shell Oil", 3820, "USD"),
            ("2025-10-06", "Payroll Acme Corp", -150_000, "USD"),
            ("2025-10-07", "Netflix", 1549, "USD"),
        ],
    );
    // One row alone: of two amounts, the last is the balance.
    let one = from_text("10/03/2025,STARBUCKS STORE 123,-4.50,1234.56");
    assert_eq!(rows(&one), [("2025-10-03".into(), "Starbucks".into(), 450, "USD".into())]);
}

#[test]
fn fixture_headerless_debit_credit_and_balance_day_first() {
    assert_statement(
        fixture!("headerless_debit_credit.csv"),
        Source::Csv,
        &[
            ("2025-10-14", "Tesco", 1240, "USD"),
            ("2025-10-15", "Salary Acme Ltd", -185_000, "USD"),
            ("2025-10-16", "TFL Travel Charge", 680, "USD"),
            ("2025-11-02", "Boots", 999, "USD"),
        ],
    );
}

#[test]
fn fixture_headerless_wells_fargo_layout() {
    assert_statement(
        fixture!("headerless_wells_fargo.csv"),
        Source::Csv,
        &[
            ("2025-10-01", "Costco Whse", 5214, "USD"),
            ("2025-10-02", "Online Transfer From Savings", -120_000, "USD"),
            ("2025-10-03", "Spotify USA", 999, "USD"),
            ("2025-10-06", "Check", 25000, "USD"),
        ],
    );
}

#[test]
fn fixture_headerless_tab_separated_positive_spending() {
    assert_statement(
        fixture!("headerless_tabs.csv"),
        Source::Csv,
        &[
            ("2025-10-03", "Blue Bottle Coffee", 650, "USD"),
            ("2025-10-04", "Whole Foods", 5821, "USD"),
            ("2025-10-06", "REI refund", -4500, "USD"),
        ],
    );
}

#[test]
fn fixture_currency_symbols_and_codes_per_row() {
    assert_statement(
        fixture!("mixed_currency_symbols.csv"),
        Source::Csv,
        &[
            ("2025-10-01", "Tim Hortons", 425, "CAD"),
            ("2025-10-02", "Pret A Manger", 610, "GBP"),
            ("2025-10-03", "Café de Flore", 1250, "EUR"),
            ("2025-10-04", "Walmart", 123_456, "USD"),
            ("2025-10-05", "Walmart refund", -3456, "USD"),
        ],
    );
}

// OFX and QFX.

#[test]
fn fixture_ofx_sgml_checking_with_unclosed_tags() {
    let found = assert_statement(
        fixture!("checking_sgml.ofx"),
        Source::Ofx,
        &[
            ("2025-10-03", "Starbucks", 450, "USD"),
            ("2025-10-15", "Acme Corp Payroll", -250_000, "USD"),
            ("2025-10-20", "Check", 125_000, "USD"),
            ("2025-10-24", "AT&T Mobility", 8512, "USD"),
        ],
    );
    assert_eq!(found.transactions[0].description, "STARBUCKS STORE 12345 POS PURCHASE SEATTLE WA");
    assert_eq!(Source::Ofx.describe(), "the OFX statement");
}

#[test]
fn fixture_ofx_xml_in_canadian_dollars() {
    assert_statement(
        fixture!("savings_xml.ofx"),
        Source::Ofx,
        &[
            ("2025-10-02", "Tim Hortons", 229, "CAD"),
            ("2025-10-15", "Maple Software Inc Pay", -310_000, "CAD"),
            ("2025-10-18", "Hydro One Networks", 14267, "CAD"),
        ],
    );
}

#[test]
fn fixture_qfx_credit_card_on_few_lines() {
    assert_statement(
        fixture!("credit_card.qfx"),
        Source::Ofx,
        &[
            ("2025-10-06", "Safeway", 5423, "USD"),
            ("2025-10-11", "Apple", 104_900, "USD"),
            ("2025-10-20", "Payment", -20000, "USD"),
        ],
    );
}

// PDFs (made by scripts/make-finance-pdfs.py).

#[test]
fn fixture_pdf_receipt_reads_through_its_text_layer() {
    let text = document::to_text("receipt.pdf", fixture_bytes!("receipt_best_buy.pdf"), LIMIT).expect("a text layer");
    let items = &[("USB-C Charger 65W", 1, 4999), ("Screen Protector", 1, 1999)];
    assert_receipts(&text, &[("Best Buy", "2025-10-25", "USD", 7610, (Some(6998), Some(612), None), items)]);
}

#[test]
fn fixture_pdf_statement_reads_as_a_table() {
    let text = document::to_text("statement.pdf", fixture_bytes!("statement_community_bank.pdf"), LIMIT)
        .expect("a text layer");
    assert_statement(
        &text,
        Source::Csv,
        &[
            ("2025-10-03", "Starbucks", 450, "USD"),
            ("2025-10-05", "Kroger", 6327, "USD"),
            ("2025-10-10", "Payroll Acme Corp", -150_000, "USD"),
            ("2025-10-12", "AT&T Wireless", 8500, "USD"),
        ],
    );
}

#[test]
fn fixture_pdf_statement_of_positioned_cells_with_empty_ones() {
    let text = document::to_text("cells.pdf", fixture_bytes!("statement_cells.pdf"), LIMIT).expect("a text layer");
    assert_statement(
        &text,
        Source::Csv,
        &[
            ("2025-10-02", "Trader Joe's", 4567, "USD"),
            ("2025-10-09", "Direct Deposit Acme", -210_000, "USD"),
            ("2025-10-15", "City Water Util", 6240, "USD"),
        ],
    );
}

#[test]
fn fixture_pdf_scan_without_text_is_refused_like_an_image() {
    let err = document::to_text("scan.pdf", fixture_bytes!("receipt_scan.pdf"), LIMIT).expect_err("no text layer");
    assert!(matches!(err, DocumentError::Image { .. }), "{err:?}");
    assert!(err.to_string().starts_with("I can't read images yet: scan.pdf is a scanned PDF"), "{err}");
}

#[test]
fn fixture_text_files_pass_through_document_unchanged_but_the_bom() {
    let chase = fixture_bytes!("chase_checking.csv");
    let text = document::to_text("chase.csv", chase, LIMIT).expect("text");
    assert!(text.starts_with("Details,Posting Date"));
    assert_eq!(rows(&from_text(&text)), rows(&from_text(fixture!("chase_checking.csv"))));
}

#[test]
fn fixtures_cut_anywhere_never_panic() {
    let texts = [
        fixture!("receipt_pasted_same_line.txt"),
        fixture!("receipt_german_eur.txt"),
        fixture!("receipts_new_header_no_gap.txt"),
        fixture!("chase_checking.csv"),
        fixture!("monzo.csv"),
        fixture!("german_bank.csv"),
        fixture!("headerless_debit_credit.csv"),
        fixture!("headerless_wells_fargo.csv"),
        fixture!("checking_sgml.ofx"),
        fixture!("savings_xml.ofx"),
        fixture!("credit_card.qfx"),
    ];
    for text in texts {
        for end in (0..text.len()).step_by(5).filter(|i| text.is_char_boundary(*i)) {
            let found = from_text(&text[..end]);
            assert!(found.transactions.iter().all(|t| t.amount.abs() < 1_000_000_000), "{}", &text[..end]);
        }
    }
    let pdfs: [&[u8]; 3] = [
        fixture_bytes!("receipt_best_buy.pdf"),
        fixture_bytes!("statement_community_bank.pdf"),
        fixture_bytes!("receipt_scan.pdf"),
    ];
    for pdf in pdfs {
        for end in (0..pdf.len()).step_by(7) {
            // A cut PDF is text, an error or a shorter text layer; never a panic.
            let _ = document::to_text("cut.pdf", &pdf[..end], LIMIT);
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 96, ..proptest::prelude::ProptestConfig::default() })]

    /// Fixtures with characters replaced, dropped or doubled anywhere read without a panic.
    #[test]
    fn fixtures_mangled_never_panic(
        which in 0usize..6,
        edits in proptest::collection::vec((0usize..4000, "[\\s\\S]{0,3}"), 1..12),
        pdf_edits in proptest::collection::vec((0usize..1100, proptest::num::u8::ANY), 1..6),
    ) {
        let texts = [
            fixture!("receipts_three_dashes.txt"),
            fixture!("bofa_checking.csv"),
            fixture!("headerless_debit_credit.csv"),
            fixture!("german_bank.csv"),
            fixture!("credit_card.qfx"),
            fixture!("receipt_one_line_paste.txt"),
        ];
        let mut text = texts[which].to_string();
        for (at, with) in edits {
            let at = (0..=at.min(text.len())).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
            let end = (at..=text.len()).find(|i| *i > at && text.is_char_boundary(*i)).unwrap_or(text.len());
            text.replace_range(at..end, &with);
        }
        let _ = from_text(&text);
        let mut pdf = fixture_bytes!("statement_cells.pdf").to_vec();
        for (at, byte) in pdf_edits {
            if let Some(b) = pdf.get_mut(at) {
                *b = byte;
            }
        }
        let _ = document::to_text("mangled.pdf", &pdf, LIMIT);
    }
}
