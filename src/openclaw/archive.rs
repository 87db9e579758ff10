//! The importer's manifests (`session-sqlite-migration-runs/<run>.json`) and the originals
//! they archived.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::error::{OpenClawError, Result};

/// A JSONL original the importer moved to `session-sqlite-import-archive/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArchivedTranscript {
    pub agent: String,
    /// The session key (`agent:main:main`) the manifest names.
    pub session_key: Option<String>,
    /// Where the file was (`sessions/<id>.jsonl`), below the state directory as it is now.
    pub source_path: PathBuf,
    /// Where it is now, below the state directory as it is now.
    pub archive_path: PathBuf,
    /// The original's SHA-256 (lowercase hex), size and inode, as the manifest records them.
    pub sha256: Option<String>,
    pub size: Option<u64>,
    pub inode: Option<String>,
    /// The manifest that records the move.
    pub manifest: PathBuf,
}

impl ArchivedTranscript {
    /// The session id the file held: its name without `.jsonl`.
    pub fn file_session_id(&self) -> Option<String> {
        let name = self.source_path.file_name()?.to_str()?;
        Some(name.strip_suffix(".jsonl").unwrap_or(name).to_owned())
    }
}

/// Every completed transcript move in the state directory's manifests, oldest run first
/// (manifest names start with the run's time).
pub fn archived_transcripts(state_dir: &Path) -> Result<Vec<ArchivedTranscript>> {
    let runs = state_dir.join("session-sqlite-migration-runs");
    let entries = match std::fs::read_dir(&runs) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => {
            return Err(OpenClawError::Io {
                path: runs,
                operation: "list the migration runs",
                reason: crate::io_reason(&error),
            });
        }
    };
    let mut manifests: Vec<PathBuf> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    manifests.sort();
    let mut found = Vec::new();
    for manifest in manifests {
        let text = std::fs::read_to_string(&manifest).map_err(|e| OpenClawError::Io {
            path: manifest.clone(),
            operation: "read the manifest",
            reason: crate::io_reason(&e),
        })?;
        let value: Value = serde_json::from_str(&text).map_err(|e| OpenClawError::Manifest {
            path: manifest.clone(),
            reason: format!("not JSON: {e}"),
        })?;
        read_manifest(state_dir, &manifest, &value, &mut found);
    }
    Ok(found)
}

fn read_manifest(
    state_dir: &Path,
    manifest: &Path,
    value: &Value,
    found: &mut Vec<ArchivedTranscript>,
) {
    let targets = value["targets"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    for target in targets {
        let agent = target["agentId"].as_str().unwrap_or_default().to_owned();
        // The state directory when the importer ran: the manifest's paths are absolute, and
        // the directory may have been moved or copied since.
        let old_state = target["sqlitePath"]
            .as_str()
            .and_then(|path| Path::new(path).ancestors().nth(4).map(Path::to_path_buf));
        let relocate = |path: &str| -> PathBuf {
            let path = PathBuf::from(path);
            match old_state.as_deref().map(|old| path.strip_prefix(old)) {
                Some(Ok(relative)) => state_dir.join(relative),
                _ => path,
            }
        };
        let moves = target["completedMoves"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        for step in moves {
            if step["kind"] != "transcript" {
                continue;
            }
            let (Some(source), Some(archive)) =
                (step["sourcePath"].as_str(), step["archivePath"].as_str())
            else {
                continue;
            };
            let identity = &step["artifact"]["identity"];
            found.push(ArchivedTranscript {
                agent: agent.clone(),
                session_key: step["sessionKey"].as_str().map(str::to_owned),
                source_path: relocate(source),
                archive_path: relocate(archive),
                sha256: identity["sha256"].as_str().map(str::to_ascii_lowercase),
                size: identity["size"].as_u64(),
                inode: match &identity["ino"] {
                    Value::String(ino) => Some(ino.clone()),
                    Value::Number(ino) => Some(ino.to_string()),
                    _ => None,
                },
                manifest: manifest.to_path_buf(),
            });
        }
    }
}
