//! Writes the seed inputs of each fuzz target into `<dir>/<target>/seed-*` (default
//! `fuzz/corpus`): lines and prefixes of the bundled pi transcript, hand-made edge cases, and
//! logs with real sidecars. Run: `cargo run --manifest-path fuzz/Cargo.toml --example make_seeds`.

use std::path::{Path, PathBuf};

use treelog::format::id_index::encode_id_page;
use treelog::format::page::encode_page;
use treelog::format::record::{Record, TIMESTAMP_NONE};

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out: PathBuf = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("corpus"));
    let sample = std::fs::read(root.join("../tests/data/pi-sample-200.jsonl")).expect("sample");
    let lines: Vec<&[u8]> = sample
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();

    let mut line_seeds: Vec<Vec<u8>> = lines
        .iter()
        .step_by(9)
        .filter(|line| line.len() < 2000)
        .map(|line| line.to_vec())
        .collect();
    for edge in [
        r#"{"type":"message","type":"label","id":"a","id":"b","parentId":null}"#,
        r#"{"type":"session","version":2,"id":"s","cwd":"/w"}"#,
        r#"{"type":"session","id":7}"#,
        r#"{"type":"leaf","id":"l","targetId":"a"}"#,
        r#"{"type":"message","parentId":"p"}"#,
        r#"{"type":"message","id":"","parentId":null}"#,
        r#"{"type":"message","id":"x","parentId":null,"appendMode":"side","message":{"role":"assistant"}}"#,
        r#"{"type":"label","id":"x","targetId":"a","label":"\ud83e\udd80"}"#,
        r#"{"type":"custom","id":"x","data":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}"#,
        r#"["message","a"]"#,
        r#"  {"type" : "model_change" , "id" : "m" } \r"#,
        "{\"type\":\"message\",\"id\":\"a\u{0}\"}",
        r#"{"type":"Message","id":"a"}"#,
        "",
        " \t\r",
        "null",
        "{",
    ] {
        line_seeds.push(edge.as_bytes().to_vec());
    }
    write_all(&out.join("line_parser"), &line_seeds);

    // open_log: mode, split (u16 LE), body.
    let prefix = |count: usize| -> Vec<u8> {
        let mut log = Vec::new();
        for line in lines.iter().take(count) {
            log.extend_from_slice(line);
            log.push(b'\n');
        }
        log
    };
    let mut open_seeds = Vec::new();
    for count in [0, 1, 2, 5, 12] {
        let log = prefix(count);
        open_seeds.push(encode_open(0, &log, b""));
        open_seeds.push(encode_open(
            2,
            b"{\"type\":\"message\",\"id\":\"t\",\"parentId\":null,\"message\":{}}\n{\"tor",
            &log,
        ));
        open_seeds.push(encode_open(1, &prefix(count + 1)[..], &log));
        open_seeds.push(encode_open(3, &[7, 0, 0, 0, 0xff, 200, 1, 0, 0, 1], &log));
    }
    let mut torn = prefix(6);
    torn.truncate(torn.len() - 30);
    open_seeds.push(encode_open(0, &torn, b""));
    open_seeds.push(encode_open(
        0,
        b"\n\n{\"type\":\"message\",\"id\":\"a\",\"parentId\":null}\n",
        b"redb",
    ));
    write_all(&out.join("open_log"), &open_seeds);

    // index_pages: first seq (u64 LE), then a page: pi-like records with hex ids, the same
    // with text ids and an opaque record, a lone root, a page of damaged links; then id pages.
    let hex: Vec<Record> = (1..40).map(Record::pi_like_message).collect();
    let mut text = hex.clone();
    text[3].id = "entry-ünï".into();
    text[7] = Record {
        kind: None,
        opaque_code: 4,
        message_span: None,
        timestamp_ms: TIMESTAMP_NONE,
        id: Default::default(),
        ..text[7].clone()
    };
    let mut damaged = hex[..5].to_vec();
    damaged[2].parent_seq = 900;
    damaged[3].message_span = Some((800, 10));
    let mut page_seeds = Vec::new();
    for (first_seq, records) in [
        (1, &hex[..]),
        (1, &text[..]),
        (1, &hex[..1]),
        (1, &damaged[..]),
    ] {
        let mut seed = u64::to_le_bytes(first_seq).to_vec();
        seed.extend_from_slice(&encode_page(first_seq, records));
        page_seeds.push(seed);
    }
    for entries in [
        vec![(7u64, 3u64)],
        (0..300u64)
            .map(|n| (n * 4_295 + 11, n * 37 % 1_000))
            .collect(),
        (0..40u64).map(|n| ((1 << 63) | n << 40, n)).collect(),
    ] {
        // Page key 0, covering every key; without its crc, which the check adds.
        let mut seed = 0u64.to_le_bytes().to_vec();
        let page = encode_id_page("ids", 0, None, &entries);
        seed.extend_from_slice(&page[..page.len() - 4]);
        page_seeds.push(seed);
    }
    write_all(&out.join("index_pages"), &page_seeds);

    // operations: pseudo-random byte strings of a few lengths.
    let mut state = 0x1234_5678_9abc_def0u64;
    let mut operations = Vec::new();
    for len in [8, 16, 32, 64, 128, 256, 512, 1024] {
        let mut bytes = Vec::with_capacity(len);
        for _ in 0..len {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            bytes.push(state as u8);
        }
        operations.push(bytes);
    }
    write_all(&out.join("operations"), &operations);
}

fn encode_open(mode: u8, a: &[u8], b: &[u8]) -> Vec<u8> {
    let split = u16::try_from(a.len()).expect("seed parts are small");
    let mut out = vec![mode];
    out.extend_from_slice(&split.to_le_bytes());
    out.extend_from_slice(a);
    out.extend_from_slice(b);
    out
}

fn write_all(dir: &Path, seeds: &[Vec<u8>]) {
    std::fs::create_dir_all(dir).expect("corpus dir");
    for (index, seed) in seeds.iter().enumerate() {
        std::fs::write(dir.join(format!("seed-{index:03}")), seed).expect("write seed");
    }
    println!("{}: {} seeds", dir.display(), seeds.len());
}
