//! Seeded schedules in CI: a fixed budget of seeds across the actor mixes, every invariant
//! checked after every step. `TREELOG_SIM_SECONDS` runs seeds for that long instead (from
//! `TREELOG_SIM_SEED_START`, default 0) and `TREELOG_SIM_SEED` runs one; `dev/store-sim`
//! runs them for hours in a release build and prints any failing seed.

use std::time::{Duration, Instant};

use super::run::{mixes, run};

/// Seeds run in CI (about a minute on the CI machine, with the other tests).
const CI_SEEDS: u64 = 1000;

/// Each seed's schedule keeps the invariants; the seeds and their throughput are printed.
#[test]
fn seeded_schedules_keep_the_invariants() {
    let mixes = mixes();
    let var = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    let (first, budget) = match (var("TREELOG_SIM_SEED"), var("TREELOG_SIM_SECONDS")) {
        (Some(seed), _) => (seed, None),
        (None, Some(seconds)) => (var("TREELOG_SIM_SEED_START").unwrap_or(0), Some(seconds)),
        (None, None) => (0, None),
    };
    let started = Instant::now();
    let (mut seeds, mut steps, mut acked) = (0u64, 0u64, 0usize);
    let mut seed = first;
    loop {
        let mix = &mixes[(seed % mixes.len() as u64) as usize];
        match run(seed, mix) {
            Ok(outcome) => {
                steps += outcome.steps;
                acked += outcome.acked;
            }
            Err(violation) => panic!("{violation}\nrerun: TREELOG_SIM_SEED={seed}"),
        }
        seeds += 1;
        seed += 1;
        let over = match budget {
            Some(seconds) => started.elapsed() >= Duration::from_secs(seconds),
            None => var("TREELOG_SIM_SEED").is_some() || seeds >= CI_SEEDS,
        };
        if over {
            break;
        }
    }
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "store sim: {seeds} schedules (seeds {first}..{seed}), {steps} steps, {acked} appends \
         acknowledged, in {secs:.1} s: {:.0} schedules/s, {:.0} steps/s",
        seeds as f64 / secs,
        steps as f64 / secs
    );
}

/// A seed names its schedule: run twice, it takes the same steps.
#[test]
fn a_seed_reproduces_its_schedule() {
    let mixes = mixes();
    for seed in [7, 8, 9] {
        let mix = &mixes[(seed % mixes.len() as u64) as usize];
        let first = run(seed, mix).unwrap();
        let again = run(seed, mix).unwrap();
        assert_eq!(first, again, "seed {seed}");
    }
}
