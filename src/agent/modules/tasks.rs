//! The task list module: numbered tasks, each with a status and an optional note.

use super::error::{ModuleError, check_len, check_name};
use super::limits::{MODULE_TEXT_BYTES_MAX, TASK_NOTE_BYTES_MAX, TASK_TITLE_BYTES_MAX, TASKS_MAX};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Where a task stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// `open`: not started.
    Open,
    /// `in_progress`: being worked on.
    InProgress,
    /// `done`: finished.
    Done,
    /// `dropped`: given up or no longer needed.
    Dropped,
}

impl TaskStatus {
    /// The status as the tools write it.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Open => "open",
            TaskStatus::InProgress => "in_progress",
            TaskStatus::Done => "done",
            TaskStatus::Dropped => "dropped",
        }
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// The task's number, unique within its list and never reused.
    pub id: u32,
    /// What the task is, in a line.
    pub title: String,
    /// Where it stands.
    pub status: TaskStatus,
    /// A note on it, if any.
    pub note: Option<String>,
}

impl Task {
    fn text_bytes(&self) -> usize {
        self.title.len() + self.note.as_ref().map_or(0, String::len)
    }
}

/// The task list: tasks in the order they were added, numbered from 1. A number is never
/// reused, not even for a dropped task, so a task named in the window stays that task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskList {
    tasks: Vec<Task>,
    next_id: u32,
}

impl Default for TaskList {
    fn default() -> Self {
        TaskList { tasks: Vec::new(), next_id: 1 }
    }
}

impl TaskList {
    /// An empty task list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an open task. Refuses an empty or overlong title or note, a full list, and a
    /// list whose text would pass [`MODULE_TEXT_BYTES_MAX`].
    pub fn add(&mut self, title: String, note: Option<String>) -> Result<&Task, ModuleError> {
        check_name("task title", &title, TASK_TITLE_BYTES_MAX)?;
        let note = note.filter(|n| !n.is_empty());
        if let Some(note) = &note {
            check_len("task note", note, TASK_NOTE_BYTES_MAX)?;
        }
        if self.tasks.len() >= TASKS_MAX {
            return Err(ModuleError::TooMany { what: "task list", max: TASKS_MAX });
        }
        let id = self.next_id;
        let next_id = id.checked_add(1).ok_or(ModuleError::TooMany { what: "task list", max: TASKS_MAX })?;
        let task = Task { id, title, status: TaskStatus::Open, note };
        self.check_total(self.text_bytes() + task.text_bytes())?;
        self.next_id = next_id;
        self.tasks.push(task);
        Ok(&self.tasks[self.tasks.len() - 1])
    }

    /// Changes a task's status, its note, or both. An empty note clears the note.
    pub fn update(
        &mut self,
        id: u32,
        status: Option<TaskStatus>,
        note: Option<String>,
    ) -> Result<&Task, ModuleError> {
        if let Some(note) = &note {
            check_len("task note", note, TASK_NOTE_BYTES_MAX)?;
        }
        let total = self.text_bytes();
        let index = self.tasks.iter().position(|t| t.id == id).ok_or(ModuleError::UnknownTask { id })?;
        if let Some(note) = &note {
            let old = self.tasks[index].note.as_ref().map_or(0, String::len);
            self.check_total(total - old + note.len())?;
        }
        let task = &mut self.tasks[index];
        if let Some(status) = status {
            task.status = status;
        }
        if let Some(note) = note {
            task.note = if note.is_empty() { None } else { Some(note) };
        }
        Ok(task)
    }

    /// The task with this id.
    pub fn get(&self, id: u32) -> Option<&Task> {
        self.tasks.iter().find(|t| t.id == id)
    }

    /// Every task, in the order added.
    pub fn tasks(&self) -> &[Task] {
        &self.tasks
    }

    /// Whether the list has no task.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    fn text_bytes(&self) -> usize {
        self.tasks.iter().map(Task::text_bytes).sum()
    }

    fn check_total(&self, bytes: usize) -> Result<(), ModuleError> {
        if bytes > MODULE_TEXT_BYTES_MAX {
            Err(ModuleError::TooLarge { what: "task list", bytes, max: MODULE_TEXT_BYTES_MAX })
        } else {
            Ok(())
        }
    }
}
