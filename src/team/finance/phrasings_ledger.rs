//! Ledger's phrasing table: expenses and tax context the way people type
//! them, each with the deductions found or the question it must raise.

use super::*;
use crate::team::finance::phrasing;

/// (total deductible, deductible items, possible items, personal count), cents.
type Read = (Cents, usize, usize, usize);

type Want = phrasing::Want<Read>;

const NO_TRANSACTIONS: &str = "I don't have any transactions yet";
const HOME_SHARE: &str = "what share of your home is it";

#[tokio::test]
async fn ledger_reads_phrasings_people_type() {
    use phrasing::Want::{Asks, Reads as Finds};
    let rows: &[(&str, &str, Want)] = &[
        (
            "which of these can I write off?",
            "2025-03-01 staples 45.00\n2025-03-02 starbucks 5.75",
            Finds((4500, 1, 0, 1)),
        ),
        ("deductions", "is my $120 adobe subscription deductible?", Finds((12_000, 1, 0, 0))),
        (
            "deductions? I have a home office",
            "2025-03-01 rent 2,000.00\n2025-03-05 con edison 100.00",
            Asks(HOME_SHARE),
        ),
        ("i work from home, what can I deduct?", "2025-03-01 rent 2,000.00", Asks(HOME_SHARE)),
        ("home office — it's about 1/5 of the house", "2025-03-05 con edison 100.00", Asks(HOME_SHARE)),
        (
            "deductions? home office is 15% of my apartment",
            "2025-03-01 rent 2,000.00\n2025-03-05 con edison 100.00",
            Finds((31_500, 2, 0, 0)),
        ),
        ("I work from home, my office takes 20% of the flat", "rent 1,500.00 on 2025-03-01", Finds((30_000, 1, 0, 0))),
        ("deductions? home office", "staples 45.00", Finds((4500, 1, 0, 0))),
        ("deductions? I make 5k a month", "2025-03-01 city hospital $6,000.00", Finds((150_000, 1, 0, 0))),
        ("I earn about 4000 a month", "2025-03-01 city hospital $4,000.00", Finds((40_000, 1, 0, 0))),
        (
            "my income is $50,000",
            "2025-03-01 City Hospital $4,000.00\n2025-04-01 CVS Pharmacy $500.00",
            Finds((75_000, 1, 0, 0)),
        ),
        ("deductions?", "cvs pharmacy 40.00", Finds((0, 0, 1, 0))),
        ("deductions?", "make sure to check 2025-03-01 city hospital $4,000.00", Finds((0, 0, 1, 0))),
        ("taxes", "2025-03-03 olive garden client dinner 80.00", Finds((4000, 1, 0, 0))),
        ("taxes", "lunch w/ client at chipotle $24.50", Finds((1225, 1, 0, 0))),
        ("taxes", "uber to client meeting 23.40", Finds((2340, 1, 0, 0))),
        (
            "what can I deduct? this was a business trip",
            "delta airlines $320.00\nmarriott 2 nights $410.00",
            Finds((73_000, 2, 0, 0)),
        ),
        ("what can I deduct?", "delta airlines $320.00", Finds((0, 0, 1, 0))),
        ("write-offs?", "donated $50 to red cross", Finds((5000, 1, 0, 0))),
        (
            "find deductions",
            "Date,Description,Amount\n03/01/2025,GITHUB,4.00\n03/02/2025,\"UDEMY COURSE, PYTHON\",19.99\n03/03/2025,NETFLIX,15.49",
            Finds((2399, 2, 0, 1)),
        ),
        ("deductions", "can you check if this is deductible\nSTAPLES\nPaper 9.99\nTOTAL 9.99", Finds((999, 1, 0, 0))),
        ("taxes?", "", Asks(NO_TRANSACTIONS)),
        ("what can I deduct for my home office?", "", Asks(NO_TRANSACTIONS)),
        ("deductions", "I pay about 2000 a month in rent", Asks(NO_TRANSACTIONS)),
    ];
    let mut wrong = phrasing::Wrong::default();
    for (objective, input, want) in rows {
        let got = LedgerTax.run(&AgentContext::detached([TOOL]), &Task::new(*objective, *input)).await;
        wrong.judge((objective, input), want, &got, |expected, out| {
            let v = &out.artifacts[0].value;
            let len = |k: &str| v[k].as_array().map_or(0, Vec::len);
            let actual = (
                money::from_value(&v["total_deductible"]).unwrap_or(-1),
                len("items"),
                len("possible"),
                v["personal_count"].as_u64().unwrap_or(99) as usize,
            );
            (actual == *expected).then_some(()).ok_or(format!("{actual:?} {}", out.result))
        });
    }
    wrong.assert_none(rows.len());
}
