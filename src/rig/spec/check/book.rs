//! The agent configurations a spec's members name, read in the same pass as the rest of the
//! check: a configuration that cannot be used, a `profile` it does not have, and a profile of
//! the wrong runtime are reported with the member, beside every structural problem.
//!
//! Only a spec read from a file has a book, since a path is read relative to the spec's
//! directory. Each configuration is read and checked once however many members name it; at
//! most [`MEMBERS_MAX`](crate::rig::limits::MEMBERS_MAX) are, each bounded by the configuration
//! format's own size limit.

use super::Problems;
use super::member::Entry;
use crate::agent::config::{CheckedConfig, ExternalRuntime, load_path};
use crate::rig::SeatRuntime;
use crate::rig::limits::CONFIG_EXCERPT_BYTES_MAX;
use crate::rig::spec::report::RigProblemCode;
use crate::rig::spec::text::{bounded, excerpt};
use serde_saphyr::Location;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;

/// A configuration as read: checked, or the one-line reason it cannot be used.
type Read = Rc<Result<CheckedConfig, String>>;

/// The agent configurations of one spec, by path, read when a member first names one.
pub(crate) struct ConfigBook {
    /// The spec's directory, which relative references are read from.
    base: PathBuf,
    read: RefCell<BTreeMap<PathBuf, Read>>,
}

impl ConfigBook {
    /// A book reading configurations relative to `base`, the spec's directory.
    pub(crate) fn new(base: impl Into<PathBuf>) -> Self {
        ConfigBook { base: base.into(), read: RefCell::new(BTreeMap::new()) }
    }

    /// The configuration at `agent_ref` (relative to the spec's directory, or absolute).
    fn config(&self, agent_ref: &str) -> Read {
        let path = self.base.join(agent_ref);
        if let Some(read) = self.read.borrow().get(&path) {
            return Rc::clone(read);
        }
        let read = Rc::new(load_path(&path).map_err(|e| one_line(&e.to_string())));
        self.read.borrow_mut().insert(path, Rc::clone(&read));
        read
    }

    /// Checks a member whose `agent_ref` (written `at`) is `agent_ref`: the configuration can
    /// be used, and `profile` (its id and where it is written) is one of its profiles or
    /// machines, of the member's runtime.
    pub(super) fn check_member(
        &self,
        entry: &Entry<'_>,
        runtime: SeatRuntime,
        agent_ref: &str,
        at: &Location,
        profile: Option<(&str, &Location)>,
        problems: &mut Problems,
    ) {
        let read = self.config(agent_ref);
        let config = match read.as_ref() {
            Ok(config) => config,
            Err(why) => {
                entry.problem(
                    problems,
                    "agent_ref",
                    Some(at),
                    RigProblemCode::AgentConfigInvalid,
                    format!(
                        "the agent configuration `{}` cannot be used: {why}; fix it, or name another \
                         configuration",
                        excerpt(agent_ref)
                    ),
                );
                return;
            }
        };
        let Some((id, at)) = profile else { return };
        let Some(message) = profile_refusal(config, runtime, agent_ref, id) else { return };
        entry.problem(problems, "profile", Some(at), message.0, message.1);
    }
}

/// Why `id` cannot be the profile of a `runtime` member running `config` (named `agent_ref`),
/// if it cannot: the one rule for the spec check and for a seat's launch.
pub(crate) fn profile_refusal(
    config: &CheckedConfig,
    runtime: SeatRuntime,
    agent_ref: &str,
    id: &str,
) -> Option<(RigProblemCode, String)> {
    let file = excerpt(agent_ref);
    let native = if config.profile(id).is_some() {
        Some("a native profile")
    } else {
        config.machine(id).map(|_| "a machine (which runs native profiles)")
    };
    let external = config.external(id).map(|profile| profile.runtime());
    if native.is_none() && external.is_none() {
        return Some((
            RigProblemCode::UnknownProfile,
            format!("`{id}` is not a profile or machine of `{file}`; {}", listing(config, None)),
        ));
    }
    if runtime == SeatRuntime::Terminal {
        return None;
    }
    let wanted = runtime.external();
    let message = match (wanted, external) {
        (None, None) => return None,
        (Some(wanted), Some(external)) if wanted == external => return None,
        (None, Some(external)) => format!(
            "`{id}` is an external `{external}` profile of `{file}`, but a `native` member runs a native \
             profile or machine: run the member on `{external}`, or name a native one ({})",
            listing(config, Some(None))
        ),
        (Some(wanted), Some(external)) => format!(
            "`{id}` is a `{external}` profile of `{file}`, but this member runs on `{wanted}`: name a \
             `{wanted}` profile ({}), or run the member on `{external}`",
            listing(config, Some(Some(wanted)))
        ),
        (Some(wanted), None) => format!(
            "`{id}` is {} of `{file}`, but a `{wanted}` member runs an external profile (`runtime: \
             {wanted}`): name one ({}), or run the member on `native`",
            native.unwrap_or("a native profile"),
            listing(config, Some(Some(wanted)))
        ),
    };
    Some((RigProblemCode::ProfileRuntimeMismatch, message))
}

/// What `config` offers, bounded for one line: every profile and machine (`which` `None`),
/// the native profiles and machines (`Some(None)`), or the external profiles of one runtime.
fn listing(config: &CheckedConfig, which: Option<Option<ExternalRuntime>>) -> String {
    let ids = |ids: Vec<String>| if ids.is_empty() { "none".to_owned() } else { ids.join(", ") };
    let natives = || ids(config.profiles().map(|p| format!("`{}`", p.id())).collect());
    let machines = || ids(config.machines().map(|m| format!("`{}`", m.id())).collect());
    // Every external profile with its runtime, or one runtime's alone.
    let externals = |runtime: Option<ExternalRuntime>| {
        ids(config
            .externals()
            .filter(|p| runtime.is_none_or(|runtime| p.runtime() == runtime))
            .map(|p| match runtime {
                None => format!("`{}` ({})", p.id(), p.runtime()),
                Some(_) => format!("`{}`", p.id()),
            })
            .collect())
    };
    let text = match which {
        None => format!(
            "it has profiles: {}; external profiles: {}; machines: {}",
            natives(),
            externals(None),
            machines()
        ),
        Some(None) => format!("it has profiles: {}; machines: {}", natives(), machines()),
        Some(Some(runtime)) => format!("its `{runtime}` profiles: {}", externals(Some(runtime))),
    };
    bounded(&text, CONFIG_EXCERPT_BYTES_MAX)
}

/// An error's text on one line, bounded: its lines joined with `; ` (with a space after a line
/// that ends in `:`, which introduces the next).
fn one_line(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines().map(str::trim).filter(|line| !line.is_empty()) {
        if !out.is_empty() {
            out.push_str(if out.ends_with(':') { " " } else { "; " });
        }
        out.push_str(line);
        if out.len() > CONFIG_EXCERPT_BYTES_MAX {
            break;
        }
    }
    bounded(&out, CONFIG_EXCERPT_BYTES_MAX)
}
