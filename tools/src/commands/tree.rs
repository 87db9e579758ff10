//! `treelog tree`: the session tree, as JSON lines or drawn like pi's `/tree`.

use std::path::PathBuf;

use serde_json::{Value, json};
use treelog::{EntryKind, Session};

use crate::exit::CliError;
use crate::out::Out;
use crate::preview;

/// Show the session tree, drawn or as JSON lines.
///
/// With --json: one object per entry, depth-first in pre-order with children in pi's order:
/// {"id","parentId","depth","label","labelTimestamp"}. Without: a drawing like pi's /tree:
/// linear runs stay at one indentation and long ones are folded, branch points open indented
/// branches, labels are shown in [brackets], and the active path (root to the session's leaf)
/// is marked with `*` in the first column.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The session log (.jsonl), or an OpenClaw session in its SQLite store:
    /// openclaw://[STATE_DIR#]AGENT/SESSION_ID (read-only; see `treelog openclaw --help`).
    pub file: PathBuf,
    /// Print JSON lines instead of a drawing.
    #[arg(long)]
    pub json: bool,
    /// Draw at most N levels of nested branches; deeper branches are summarised in one line.
    #[arg(long, value_name = "N")]
    pub max_depth: Option<u32>,
    /// Do not fold long linear runs.
    #[arg(long)]
    pub no_fold: bool,
}

pub fn run(args: Args, out: &mut Out) -> Result<(), CliError> {
    if super::foreign::detect_file(&args.file).is_some() {
        let foreign = super::foreign::load(&args.file)?;
        return super::foreign::tree(&foreign, args.json, out);
    }
    let session = super::open_default(&args.file)?;
    if args.json {
        return print_json(&session, out);
    }
    let drawing = Drawing {
        max_depth: args.max_depth,
        fold: !args.no_fold,
    };
    draw(&session, &drawing, out)
}

fn print_json(session: &Session, out: &mut Out) -> Result<(), CliError> {
    for node in session.tree()? {
        let node = node?;
        let line = json!({
            "id": node.id,
            "parentId": node.parent_id,
            "depth": node.depth,
            "label": node.label,
            "labelTimestamp": node.label_timestamp,
        });
        out.line(&line.to_string())?;
    }
    Ok(())
}

/// How the drawing is shaped.
pub struct Drawing {
    /// Levels of nested branches drawn (None: all).
    pub max_depth: Option<u32>,
    /// Fold long linear runs.
    pub fold: bool,
}

/// Entries at each end of a linear run that are always drawn.
const RUN_ENDS_SHOWN: usize = 2;
/// A gap of fewer hidden entries than this is drawn instead of folded.
const FOLD_GAP_MIN: usize = 3;
const NONE: u32 = u32::MAX;

/// One tree node, with links, held for the whole tree so a drawing can look ahead.
struct Node {
    id: String,
    kind: EntryKind,
    label: Option<String>,
    depth: u32,
    parent: u32,
    first_child: u32,
    last_child: u32,
    next_sibling: u32,
    child_count: u32,
}

struct Forest {
    nodes: Vec<Node>,
    roots: Vec<u32>,
    on_path: Vec<bool>,
    leaf: u32,
    /// Entries in the subtree of each node, itself included.
    subtree_len: Vec<u64>,
}

fn load(session: &Session) -> Result<Forest, CliError> {
    let mut nodes: Vec<Node> = Vec::new();
    let mut roots = Vec::new();
    // The current root-to-node chain of the pre-order walk.
    let mut chain: Vec<u32> = Vec::new();
    for node in session.tree()? {
        let node = node?;
        while chain
            .last()
            .is_some_and(|top| nodes[*top as usize].depth >= node.depth)
        {
            chain.pop();
        }
        let index = nodes.len() as u32;
        let parent = match (chain.last(), &node.parent_id) {
            (Some(top), Some(_)) => *top,
            _ => NONE,
        };
        if parent == NONE {
            chain.clear();
            roots.push(index);
        } else {
            let parent_node = &mut nodes[parent as usize];
            parent_node.child_count += 1;
            let previous = parent_node.last_child;
            parent_node.last_child = index;
            if previous == NONE {
                parent_node.first_child = index;
            } else {
                nodes[previous as usize].next_sibling = index;
            }
        }
        chain.push(index);
        nodes.push(Node {
            id: node.id,
            kind: node.kind,
            label: node.label,
            depth: node.depth,
            parent,
            first_child: NONE,
            last_child: NONE,
            next_sibling: NONE,
            child_count: 0,
        });
    }
    let mut subtree_len = vec![1u64; nodes.len()];
    for index in (0..nodes.len()).rev() {
        let parent = nodes[index].parent;
        if parent != NONE {
            subtree_len[parent as usize] += subtree_len[index];
        }
    }
    let mut on_path = vec![false; nodes.len()];
    let leaf_id = session.leaf_id()?;
    let leaf = leaf_id
        .and_then(|id| nodes.iter().rposition(|node| node.id == id))
        .map_or(NONE, |index| index as u32);
    let mut at = leaf;
    while at != NONE {
        on_path[at as usize] = true;
        at = nodes[at as usize].parent;
    }
    Ok(Forest {
        nodes,
        roots,
        on_path,
        leaf,
        subtree_len,
    })
}

/// A pending branch to draw: its first node, the prefix of its first line and of the rest,
/// and how many branch levels deep it is.
struct Pending {
    node: u32,
    first_prefix: String,
    rest_prefix: String,
    level: u32,
}

/// Draws the tree of `session` to `out`.
pub fn draw(session: &Session, drawing: &Drawing, out: &mut Out) -> Result<(), CliError> {
    let forest = load(session)?;
    if forest.nodes.is_empty() {
        return out.line("(no entries)");
    }
    let mut stack: Vec<Pending> = Vec::new();
    let many_roots = forest.roots.len() > 1;
    push_branches(
        &mut stack,
        &forest.roots,
        "",
        if many_roots { 1 } else { 0 },
    );
    while let Some(pending) = stack.pop() {
        let run = linear_run(&forest, pending.node);
        draw_run(session, &forest, &run, &pending, drawing, out)?;
        let Some(&last) = run.last() else { continue };
        let last_node = &forest.nodes[last as usize];
        if last_node.child_count < 2 {
            continue;
        }
        let children = children_of(&forest, last);
        if drawing
            .max_depth
            .is_some_and(|max_depth| pending.level >= max_depth)
        {
            let hidden: u64 = children
                .iter()
                .map(|child| forest.subtree_len[*child as usize])
                .sum();
            let mark = if children.iter().any(|c| forest.on_path[*c as usize]) {
                '*'
            } else {
                ' '
            };
            out.line(&format!(
                "{mark} {}… {} branches with {hidden} entries (deeper than --max-depth) …",
                pending.rest_prefix,
                children.len()
            ))?;
            continue;
        }
        push_branches(
            &mut stack,
            &children,
            &pending.rest_prefix,
            pending.level + 1,
        );
    }
    Ok(())
}

fn children_of(forest: &Forest, node: u32) -> Vec<u32> {
    let mut children = Vec::new();
    let mut child = forest.nodes[node as usize].first_child;
    while child != NONE {
        children.push(child);
        child = forest.nodes[child as usize].next_sibling;
    }
    children
}

/// Queues `branches` (drawn in order) with tree connectors under `prefix`.
fn push_branches(stack: &mut Vec<Pending>, branches: &[u32], prefix: &str, level: u32) {
    let connectors = level > 0;
    for (position, node) in branches.iter().enumerate().rev() {
        let last = position + 1 == branches.len();
        let (first, rest) = match (connectors, last) {
            (false, _) => (String::new(), String::new()),
            (true, false) => (format!("{prefix}├─ "), format!("{prefix}│  ")),
            (true, true) => (format!("{prefix}└─ "), format!("{prefix}   ")),
        };
        stack.push(Pending {
            node: *node,
            first_prefix: first,
            rest_prefix: rest,
            level,
        });
    }
}

/// The chain from `start` while each node has exactly one child.
fn linear_run(forest: &Forest, start: u32) -> Vec<u32> {
    let mut run = vec![start];
    let mut at = start;
    while forest.nodes[at as usize].child_count == 1 {
        at = forest.nodes[at as usize].first_child;
        run.push(at);
    }
    run
}

/// Whether a node in a run is always drawn (never folded away).
fn notable(forest: &Forest, node: u32) -> bool {
    let entry = &forest.nodes[node as usize];
    entry.label.is_some()
        || node == forest.leaf
        || matches!(
            entry.kind,
            EntryKind::Compaction | EntryKind::BranchSummary | EntryKind::SessionInfo
        )
}

fn draw_run(
    session: &Session,
    forest: &Forest,
    run: &[u32],
    pending: &Pending,
    drawing: &Drawing,
    out: &mut Out,
) -> Result<(), CliError> {
    let shown = |position: usize| {
        !drawing.fold
            || position < RUN_ENDS_SHOWN
            || position + RUN_ENDS_SHOWN >= run.len()
            || notable(forest, run[position])
    };
    let mut position = 0;
    while position < run.len() {
        let prefix = if position == 0 {
            &pending.first_prefix
        } else {
            &pending.rest_prefix
        };
        let gap = (position..run.len()).take_while(|at| !shown(*at)).count();
        if gap >= FOLD_GAP_MIN {
            let mark = if forest.on_path[run[position] as usize] {
                '*'
            } else {
                ' '
            };
            out.line(&format!("{mark} {prefix}… {gap} more entries …"))?;
            position += gap;
            continue;
        }
        let node = run[position];
        let mark = if forest.on_path[node as usize] {
            '*'
        } else {
            ' '
        };
        let line = node_line(session, forest, node)?;
        out.line(&format!("{mark} {prefix}{line}"))?;
        position += 1;
    }
    Ok(())
}

/// `id kind [label]: preview` for one node (the caller adds the mark and the prefix).
fn node_line(session: &Session, forest: &Forest, node: u32) -> Result<String, CliError> {
    let entry = &forest.nodes[node as usize];
    let value = match session.entry(&entry.id)? {
        Some(found) => serde_json::from_str(&found.json).unwrap_or(Value::Null),
        None => Value::Null,
    };
    let mut line = format!("{} {}", entry.id, entry.kind);
    if let Some(label) = &entry.label {
        line.push_str(&format!(" [{label}]"));
    }
    let text = preview::entry_preview(entry.kind, &value);
    if !text.is_empty() {
        line.push(' ');
        line.push_str(&text);
    }
    if node == forest.leaf {
        line.push_str("  ← leaf");
    }
    Ok(line)
}
