//! Opens many small sessions in a row: `cargo run -p treelog-dev --release --example many_opens -- DIR [N]`.
use std::time::Instant;

mod probe;

const PROBE: probe::Probe = probe::Probe {
    name: "many_opens",
    arguments: "DIR [N]",
    about: "Creates N small sessions s0000.jsonl... in DIR (default 1000; those that exist are kept),\n\
            then opens all of them in a row, three times, printing the time of each round.",
};

fn main() {
    let args = PROBE.args(2);
    let dir = std::path::PathBuf::from(PROBE.required(&args, 0, "DIR (where the sessions go)"));
    let count = PROBE.number(&args, 1, "N", 1000);
    PROBE.check(
        std::fs::create_dir_all(&dir),
        &format!("create {}", dir.display()),
    );
    for index in 0..count {
        let path = dir.join(format!("s{index:04}.jsonl"));
        if !path.exists() {
            let mut session =
                PROBE.check(treelog::Session::open(&path, Default::default()), "create");
            PROBE.check(
                session.append_message(r#"{"role":"user","content":"hello there","timestamp":1}"#),
                "append",
            );
            PROBE.check(
                session.append_message(
                    r#"{"role":"assistant","content":[],"provider":"p","model":"m","timestamp":2}"#,
                ),
                "append",
            );
            PROBE.check(session.close(), "close");
            drop(PROBE.check(treelog::Session::open(&path, Default::default()), "index"));
        }
    }
    for _ in 0..3 {
        let start = Instant::now();
        let mut messages = 0;
        for index in 0..count {
            let path = dir.join(format!("s{index:04}.jsonl"));
            let mut session =
                PROBE.check(treelog::Session::open(&path, Default::default()), "open");
            messages += PROBE.check(session.stats(), "stats").counts_by_kind[0].1;
        }
        println!(
            "{count} opens in {:?} ({messages} messages)",
            start.elapsed()
        );
    }
}
