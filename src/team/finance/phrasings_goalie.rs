//! Goalie's phrasing table: goals the way people type them, each with the
//! goal read from it or the question it must raise. Today is 2025-10.

use super::*;
use crate::team::finance::phrasing;

/// (name, target, saved, monthly, deadline, status), cents.
type Read = (&'static str, Cents, Cents, Cents, Option<(i32, u32)>, &'static str);

type Want = phrasing::Want<&'static [Read]>;

const TARGET_SAVED_MONTHLY: &str = "which amount is the goal's target";

#[test]
fn goalie_reads_phrasings_people_type() {
    use phrasing::Want::{Asks, Reads as Goals};
    const EMERGENCY: Read = ("Emergency fund", 1_000_000, 200_000, 25_000, None, "no_deadline");
    let rows: &[(&str, Want)] = &[
        ("I've got 2k saved toward a 10k emergency fund, putting away 250 a month", Goals(&[EMERGENCY])),
        (
            "hey goalie!\nI've got 2k saved toward a 10k emergency fund\nputting away 250 a month\nam I on track?",
            Goals(&[EMERGENCY]),
        ),
        (
            "saving for a trip: need 3000 by next june, have 800",
            Goals(&[("Trip", 300_000, 80_000, 0, Some((2026, 6)), "behind")]),
        ),
        (
            "Vacation 3000, have 1200, 200/month by June 2026",
            Goals(&[("Vacation", 300_000, 120_000, 20_000, Some((2026, 6)), "behind")]),
        ),
        ("goal: 5000. saved: 1000. 250/mo", Goals(&[("Goal 1", 500_000, 100_000, 25_000, None, "no_deadline")])),
        (
            "new car fund: $1.2k of $15,000, adding 300 a month",
            Goals(&[("New car fund", 1_500_000, 120_000, 30_000, None, "no_deadline")]),
        ),
        (
            "Wedding — need 20,000 by 2026-09, have 5,500 saved, saving 1,500 a month",
            Goals(&[("Wedding", 2_000_000, 550_000, 150_000, Some((2026, 9)), "on_track")]),
        ),
        (
            "house down payment 60k, got 12k so far, 1.5k monthly",
            Goals(&[("House down payment", 6_000_000, 1_200_000, 150_000, None, "no_deadline")]),
        ),
        (
            "am I on track? I want 15k for a car in 2 years, have 3k, saving 500/month",
            Goals(&[("Car", 1_500_000, 300_000, 50_000, Some((2027, 10)), "on_track")]),
        ),
        (
            "target 10k by dec 2026, saving 400/mo, nothing saved yet",
            Goals(&[("Goal 1", 1_000_000, 0, 40_000, Some((2026, 12)), "behind")]),
        ),
        ("Bike $900", Goals(&[("Bike", 90_000, 0, 0, None, "no_deadline")])),
        ("emergency fund 10000 / 2500 saved", Goals(&[("Emergency fund", 1_000_000, 250_000, 0, None, "no_deadline")])),
        (
            "I put aside $100 every week for a $2,400 laptop",
            Goals(&[("Laptop", 240_000, 0, 43_333, None, "no_deadline")]),
        ),
        (
            "I'm 32, want 50k for a house deposit by 2028, have 10k",
            Goals(&[("House deposit", 5_000_000, 1_000_000, 0, Some((2028, 12)), "behind")]),
        ),
        (
            "£5,000 house deposit, have £1,000, putting away £200 a month by christmas",
            Goals(&[("House deposit", 500_000, 100_000, 20_000, Some((2025, 12)), "behind")]),
        ),
        (
            "I've saved $1,200 so far. My goal is $5,000 by the end of next year.",
            Goals(&[("Goal 1", 500_000, 120_000, 0, Some((2026, 12)), "behind")]),
        ),
        // Amounts without a role: a question, not a guess.
        ("I have 2000 and 500", Asks(TARGET_SAVED_MONTHLY)),
        ("emergency fund target 10k, 2k", Asks(TARGET_SAVED_MONTHLY)),
        ("Trip 3000 and 800", Asks(TARGET_SAVED_MONTHLY)),
        ("car 8000 2000 300", Asks(TARGET_SAVED_MONTHLY)),
        ("target 10k by dec 2026, saving 400/mo", Asks("How much have you already saved toward")),
        ("saving 250 a month", Asks("What is the target amount")),
        (
            "Car: target 8000, have 2000\nTrip: target 3000, have 500\nputting away 200 a month",
            Asks("Which of your goals is 'putting away 200 a month' for?"),
        ),
        ("as of 2026-03\ntrip: need 3000 by next june, have 800", Asks("do you mean 2026-06 or 2027-06?")),
        ("Emergency fund: 3 months of expenses", Asks("Which savings goal should I track?")),
        ("am I on track?", Asks("Which savings goal should I track?")),
    ];
    let mut wrong = phrasing::Wrong::default();
    for (input, want) in rows {
        let got = answer(input, (2025, 10));
        wrong.judge(input, want, &got, |expected, out| {
            let goals = out.artifacts[0].value.as_array().cloned().unwrap_or_default();
            let actual: Vec<String> = goals
                .iter()
                .map(|g| {
                    let c = |k: &str| money::from_value(&g[k]).unwrap_or(-1);
                    format!(
                        "{:?}",
                        (
                            g["name"].as_str(),
                            c("target"),
                            c("saved"),
                            c("monthly"),
                            g["deadline"].as_str(),
                            g["status"].as_str()
                        )
                    )
                })
                .collect();
            let expected: Vec<String> = expected
                .iter()
                .map(|(n, t, s, m, d, st)| {
                    let d = d.map(dates::month_label);
                    format!("{:?}", (Some(*n), *t, *s, *m, d.as_deref(), Some(*st)))
                })
                .collect();
            (actual == expected).then_some(()).ok_or(format!("{actual:?}"))
        });
    }
    wrong.assert_none(rows.len());
}
