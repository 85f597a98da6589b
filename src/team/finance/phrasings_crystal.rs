//! Crystal's phrasing table: spending data and questions the way people type
//! them, each with the analysis read from it or the question it must raise.

use super::*;
use crate::team::finance::phrasing;

/// (transactions, spent, top category, months, words the summary starts with).
type Read = (usize, Cents, &'static str, usize, &'static str);

type Want = phrasing::Want<Read>;

const NO_TRANSACTIONS: &str = "I don't have any transactions yet";

#[tokio::test]
async fn crystal_reads_phrasings_people_type() {
    use phrasing::Want::{Asks, Reads};
    let rows: &[(&str, &str, Want)] = &[
        (
            "how much did I spend on coffee?",
            "2025-03-01 starbucks 5.75\n2025-03-03 blue bottle 6.50\n2025-03-04 whole foods 80.00",
            Reads((3, 9225, "Groceries", 1, "Dining - Coffee: $12.25 (2 transactions, 2025-03). Analyzed 3")),
        ),
        (
            "analyze",
            "how much did I spend at starbucks this month?\n03/01/2025 STARBUCKS #12 5.75\n03/09/2025 starbucks 4.25\n03/10/2025 uber 20.00",
            Reads((3, 3000, "Transport", 1, "starbucks: $10.00 (2 transactions, 2025-03). Analyzed 3")),
        ),
        ("how much did I spend on coffee?", "", Asks(NO_TRANSACTIONS)),
        ("analyze my spending", "I spend about 300 a month on groceries", Asks(NO_TRANSACTIONS)),
        ("hi crystal! am I spending too much?", "", Asks(NO_TRANSACTIONS)),
        ("analyze", "starbucks and uber mostly", Asks(NO_TRANSACTIONS)),
        (
            "Analyze spending to find savings on gas",
            "2025-03-01 shell 40.00",
            Reads((1, 4000, "Transport", 1, "Analyzed 1 transactions in 1 month")),
        ),
        (
            "Analyze my spending",
            include_str!("../../../examples/statement.csv"),
            Reads((31, 570_855, "Rent", 3, "Analyzed 31 transactions over 3 months: $5,708.55")),
        ),
        (
            "where does my money go?",
            include_str!("../../../examples/receipts.txt"),
            Reads((4, 42_035, "Office Supplies", 2, "Analyzed 4 transactions over 2 months")),
        ),
        (
            "analyze",
            "spent 45 at starbucks and 12 at subway yesterday",
            Reads((2, 5700, "Dining - Coffee", 0, "Analyzed 2 transactions: $57.00 spent")),
        ),
        (
            "analyze",
            "rent 1,200 bucks, coffee $45, groceries $300",
            Reads((3, 154_500, "Rent", 0, "Analyzed 3 transactions: $1,545.00")),
        ),
        (
            "analyze",
            "$1.2k rent on 2025-03-01\n2025-04-01 rent $1.2k",
            Reads((2, 240_000, "Rent", 2, "Analyzed 2 transactions over 2 months: $2,400.00 spent ($1,200.00/month)")),
        ),
        (
            "analyze",
            "2025-03-01 starbucks $5.75\n2025-03-02 café paul €4.50\n2025-03-03 uber $20.00",
            Reads((2, 2575, "Transport", 1, "Analyzed 2 transactions in 1 month: $25.75")),
        ),
        (
            "what's my spending by month",
            "Date;Payee;Debit;Credit\n14/03/2025;Lidl;12,30;\n02/04/2025;Tesco;20,00;\n03/04/2025;Salary;;1.500,00",
            Reads((3, 3230, "Groceries", 2, "Analyzed 3 transactions over 2 months: $32.30")),
        ),
        (
            "analyze",
            "\"Date\",\"Description\",\"Amount\"\n\"03/14/2025\",\"POS PURCHASE STARBUCKS #1234\",\"-5.75\"\n\
             \"03/15/2025\",\"PAYROLL ACME\",\"2,000.00\"\n\"03/16/2025\",\"AMAZON.COM*AB12\",\"-23.99\"",
            Reads((3, 2974, "Shopping", 1, "Analyzed 3 transactions in 1 month: $29.74")),
        ),
        (
            "any subscriptions I should cancel?",
            "netflix 15.49 on 2025-01-05\nnetflix 15.49 on 2025-02-05\nnetflix 15.49 on 2025-03-05",
            Reads((3, 4647, "Entertainment", 3, "Analyzed 3 transactions over 3 months: $46.47")),
        ),
        (
            "how much did I spend on groceries?",
            "03/02/2025 costco 120.50\n03/15/2025 trader joes 45.25\n04/01/2025 costco 99.00",
            Reads((3, 26_475, "Groceries", 2, "Groceries: $264.75 (3 transactions, 2025-03 to 2025-04)")),
        ),
        (
            "how much did I spend on gas?",
            "2025-03-01 shell 40.00\n2025-03-08 starbucks 5.00",
            Asks("Which spending category do you mean by 'gas'?"),
        ),
        (
            "how much did I spend on transport?",
            "2025-03-01 shell 40.00\n2025-03-08 starbucks 5.00",
            Reads((2, 4500, "Transport", 1, "Transport: $40.00 (1 transaction, 2025-03)")),
        ),
        (
            "how much did i spend on travel",
            "2025-03-01 starbucks 5.00",
            Reads((1, 500, "Dining - Coffee", 1, "Travel: $0.00 (0 transactions). Analyzed 1")),
        ),
        (
            "analyze",
            "i got a refund from amazon 23.99 on 2025-03-02\n2025-03-01 amazon 23.99\n2025-03-03 whole foods 50.00",
            Reads((3, 7399, "Groceries", 1, "Analyzed 3 transactions in 1 month: $73.99")),
        ),
        (
            "analyze",
            "hey! here's last week:\n- uber eats 31.20\n- lyft 14.00\n- trader joe's 64.10",
            Reads((3, 10_930, "Groceries", 0, "Analyzed 3 transactions: $109.30")),
        ),
    ];
    let mut wrong = phrasing::Wrong::default();
    for (objective, input, want) in rows {
        let got = CrystalAnalytics.run(&AgentContext::detached([TOOL]), &Task::new(*objective, *input)).await;
        wrong.judge(input, want, &got, |(count, spent, top, months, starts), out| {
            let a = &out.artifacts[0].value;
            let actual = (
                a["transaction_count"].as_u64().unwrap_or(0) as usize,
                money::from_value(&a["total_spent"]).unwrap_or(-1),
                a["by_category"][0]["category"].as_str().unwrap_or_default(),
                a["months"].as_array().map_or(0, Vec::len),
            );
            let matches = (*count, *spent, *top, *months) == actual;
            (matches && out.summary.starts_with(starts)).then_some(()).ok_or(format!("{actual:?} {:?}", out.summary))
        });
    }
    wrong.assert_none(rows.len());
}
