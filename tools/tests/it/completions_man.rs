//! `treelog completions bash|zsh|fish` and `treelog man`: generated from the CLI definition, so
//! they know every subcommand `treelog --help` lists; the bash script is valid bash; the pages are
//! roff, one per subcommand.

use std::process::{Command, Output};

fn treelog(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_treelog"))
        .args(args)
        .output()
        .expect("run treelog")
}

fn run_ok(args: &[&str]) -> String {
    let output = treelog(args);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8")
}

/// The subcommands `treelog --help` lists (without `help`).
fn subcommands() -> Vec<String> {
    let help = run_ok(&["--help"]);
    let listed: Vec<String> = help
        .lines()
        .skip_while(|line| !line.starts_with("Commands:"))
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        // A description too long for one line goes on in a line indented further: not a name.
        .filter(|line| !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(String::from)
        .collect();
    assert!(listed.len() >= 10, "{help}");
    listed
}

/// Each shell's script names every subcommand and some of their options; bash's parses.
#[test]
fn completions_cover_every_subcommand() {
    let names = subcommands();
    for shell in ["bash", "zsh", "fish"] {
        let script = run_ok(&["completions", shell]);
        for name in &names {
            assert!(script.contains(name.as_str()), "{shell}: no {name}");
        }
        for option in ["on-conflict", "json", "force"] {
            // fish names long options `-l NAME`, the others `--NAME`.
            let spelled = match shell {
                "fish" => format!("-l {option}"),
                _ => format!("--{option}"),
            };
            assert!(script.contains(&spelled), "{shell}: no {spelled}");
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("treelog.bash");
    std::fs::write(&script, run_ok(&["completions", "bash"])).unwrap();
    match Command::new("bash").arg("-n").arg(&script).output() {
        Ok(output) => assert!(
            output.status.success(),
            "bash -n: {}",
            String::from_utf8_lossy(&output.stderr)
        ),
        Err(error) => println!("bash not run ({error}): the script's syntax is not checked"),
    }
    let refused = treelog(&["completions", "powershell"]);
    assert_eq!(refused.status.code(), Some(2));
}

/// `treelog man` prints treelog(1) listing every subcommand; `treelog man verify` prints
/// treelog-verify(1) with its options; `--dir` writes one page per subcommand; an unknown
/// subcommand is a usage error.
#[test]
fn man_pages() {
    let names = subcommands();
    let page = run_ok(&["man"]);
    assert!(page.contains(".TH treelog 1"), "{page}");
    for name in &names {
        assert!(page.contains(name.as_str()), "treelog(1) lacks {name}");
    }
    let verify = run_ok(&["man", "verify"]);
    assert!(verify.contains(".TH treelog-verify 1"), "{verify}");
    assert!(
        verify.contains("\\-\\-json") && verify.contains("\\-\\-full"),
        "{verify}"
    );

    let dir = tempfile::tempdir().unwrap();
    run_ok(&["man", "--dir", dir.path().to_str().unwrap()]);
    let mut written: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    let mut expected: Vec<String> = names
        .iter()
        .map(|name| format!("treelog-{name}.1"))
        .chain(["treelog.1".to_string()])
        // A subcommand with subcommands of its own gets a page for each of them too.
        .chain(
            ["export", "list", "recover", "verify"].map(|sub| format!("treelog-openclaw-{sub}.1")),
        )
        .collect();
    expected.sort();
    assert_eq!(written, expected);

    let unknown = treelog(&["man", "nope"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&unknown.stderr),
        "treelog: no subcommand named nope; `treelog --help` lists them\n"
    );
}
