//! The demo swarm: a real process tree that counts the words of the files under a directory.
//!
//! One `demo.folder` process per directory and one `demo.file` process per file. Each folder
//! process is delegated read authority on its own directory only (`fs:<dir>`), launches a
//! child per entry, waits on each, reads each child's result object, and exits with the sums.
//! Results flow up through `wait_child_process` and `process_exit` payloads.

use crate::actors::ImageId;
use crate::actors::kernel::budget::Budget;
use crate::actors::kernel::capability::{CapabilityRequest, Rights};
use crate::actors::kernel::launch::{LaunchRequest, PathRequest};
use crate::actors::runtime::calls::ToolError;
use crate::actors::runtime::program::{Image, ProgramError, program_fn};
use crate::actors::runtime::{ProcessContext, RootSpec};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// The folder image id.
pub const FOLDER_IMAGE: &str = "demo.folder";
/// The file image id.
pub const FILE_IMAGE: &str = "demo.file";

/// Most entries one folder process launches children for; the rest are counted as skipped.
/// Keeps a demo on a huge tree bounded.
pub const DEMO_ENTRIES_PER_FOLDER_MAX: usize = 256;

/// Largest file the demo reads, in bytes; larger files are reported as skipped.
pub const DEMO_FILE_BYTES_MAX: u64 = 8 * 1024 * 1024;

/// Both demo images.
pub fn images() -> Vec<Image> {
    vec![
        Image::new(FOLDER_IMAGE, |_| program_fn(folder_program)).requires("process:spawn"),
        Image::new(FILE_IMAGE, |_| program_fn(file_program)),
    ]
}

/// The root of a demo run over `dir` (absolute).
pub fn root_spec(dir: &Path) -> RootSpec {
    let dir = dir.to_string_lossy().to_string();
    let cap = |resource: String, rights| CapabilityRequest {
        resource,
        rights,
        constraints: Default::default(),
        delegable: true,
    };
    RootSpec {
        clearance: None,
        goal_labels: Default::default(),
        goal: dir.clone(),
        image: ImageId::from(FOLDER_IMAGE),
        cwd: dir.clone(),
        capabilities: vec![
            cap("process:spawn".into(), Rights::EXECUTE),
            cap(format!("fs:{dir}"), Rights::READ),
            cap(format!("image:{FILE_IMAGE}"), Rights::READ),
        ],
        budget: Budget::UNLIMITED,
        supervision: None,
    }
}

fn skip(name: &str) -> bool {
    name.starts_with('.') || name == "target" || name == "node_modules"
}

async fn folder_program(ctx: ProcessContext) -> Result<(), ProgramError> {
    let dir = PathBuf::from(ctx.goal());
    let listing = tokio::task::spawn_blocking({
        let dir = dir.clone();
        move || -> std::io::Result<Vec<(String, bool)>> {
            let mut entries = Vec::new();
            for entry in std::fs::read_dir(&dir)? {
                let entry = entry?;
                let name = entry.file_name().to_string_lossy().to_string();
                let kind = entry.file_type()?;
                if skip(&name) || !(kind.is_dir() || kind.is_file()) {
                    continue;
                }
                entries.push((name, kind.is_dir()));
            }
            entries.sort();
            Ok(entries)
        }
    })
    .await
    .map_err(|e| ProgramError::new(format!("listing task failed: {e}")))?
    .map_err(|e| ProgramError::new(format!("failed to list {}: {e}", dir.display())))?;

    let skipped = listing.len().saturating_sub(DEMO_ENTRIES_PER_FOLDER_MAX);
    let mut children = Vec::new();
    for (name, is_dir) in listing.into_iter().take(DEMO_ENTRIES_PER_FOLDER_MAX) {
        let path = dir.join(&name).to_string_lossy().to_string();
        // Keyed by the entry's name: a folder restarted after a crash re-lists its directory
        // and launches again, and each launch answers the child it already made.
        let mut request = LaunchRequest {
            launch_key: Some(name.clone()),
            goal: path.clone(),
            image: Some(ImageId::from(if is_dir { FOLDER_IMAGE } else { FILE_IMAGE })),
            inherit_paths: vec![PathRequest { path: name.clone(), rights: Rights::READ, delegable: is_dir }],
            ..LaunchRequest::default()
        };
        if is_dir {
            request.working_directory = Some(name.clone());
            request.inherit_capabilities = vec![
                CapabilityRequest {
                    resource: "process:spawn".into(),
                    rights: Rights::EXECUTE,
                    constraints: Default::default(),
                    delegable: true,
                },
                CapabilityRequest {
                    resource: format!("image:{FILE_IMAGE}"),
                    rights: Rights::READ,
                    constraints: Default::default(),
                    delegable: true,
                },
            ];
        }
        let launched = ctx.spawn_child(request).await?;
        children.push(launched.pid);
    }

    let (mut words, mut lines, mut bytes, mut files, mut folders, mut failed) =
        (0u64, 0u64, 0u64, 0u64, 0u64, 0u64);
    for child in children {
        let waited = ctx.wait_child(child, true).await?;
        let payload = match waited.result_oid {
            Some(oid) if waited.status == crate::actors::Status::Exited => {
                ctx.read_object(oid).await?.payload
            }
            _ => None,
        };
        let Some(result) = payload else {
            failed += 1;
            continue;
        };
        let n = |key: &str| result.get(key).and_then(Value::as_u64).unwrap_or(0);
        words += n("words");
        lines += n("lines");
        bytes += n("bytes");
        files += n("files").max(u64::from(result.get("files").is_none()));
        folders += n("folders");
        failed += n("failed");
    }
    ctx.exit(Some(json!({
        "path": dir.to_string_lossy(),
        "words": words,
        "lines": lines,
        "bytes": bytes,
        "files": files,
        "folders": folders + 1,
        "failed": failed,
        "skipped": skipped,
    })))
    .await?;
    Ok(())
}

async fn file_program(ctx: ProcessContext) -> Result<(), ProgramError> {
    let path = PathBuf::from(ctx.goal());
    let counted = tokio::task::spawn_blocking(move || -> std::io::Result<Value> {
        let meta = std::fs::metadata(&path)?;
        if meta.len() > DEMO_FILE_BYTES_MAX {
            return Ok(json!({ "path": path.to_string_lossy(), "skipped": 1, "bytes": meta.len() }));
        }
        let data = std::fs::read(&path)?;
        let text = String::from_utf8_lossy(&data);
        Ok(json!({
            "path": path.to_string_lossy(),
            "words": text.split_whitespace().count(),
            "lines": text.lines().count(),
            "bytes": data.len(),
        }))
    })
    .await
    .map_err(|e| ProgramError::new(format!("counting task failed: {e}")))?
    .map_err(|e| ProgramError::new(format!("failed to read: {e}")))?;
    ctx.exit(Some(counted)).await.map_err(|e: ToolError| ProgramError::new(e.to_string()))?;
    Ok(())
}
