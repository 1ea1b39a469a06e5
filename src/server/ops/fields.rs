//! The one reader of request objects: field by field, collecting every
//! problem as the per-field `details` of a 400.

use super::super::errors::{ApiError, add_detail};
use crate::protocol::{Details, name_problem};
use serde_json::{Map, Value};

/// Field-by-field reader of a request object that collects every problem.
pub(crate) struct Fields<'a> {
    obj: &'a Map<String, Value>,
    details: Details,
}

impl<'a> Fields<'a> {
    /// A reader of `obj`; `details` holds problems found before (the room id).
    pub(crate) fn new(obj: &'a Map<String, Value>, details: Details) -> Self {
        Fields { obj, details }
    }

    /// The field's value; JSON `null` counts as absent.
    pub(crate) fn get(&self, name: &str) -> Option<&'a Value> {
        self.obj.get(name).filter(|v| !v.is_null())
    }

    /// Records a problem with field `name`.
    pub(crate) fn problem(&mut self, name: &str, message: &str) {
        add_detail(&mut self.details, name, message);
    }

    /// An optional string field.
    pub(crate) fn string(&mut self, name: &str) -> Option<String> {
        match self.get(name)? {
            Value::String(s) => Some(s.clone()),
            _ => {
                self.problem(name, "must be a string");
                None
            }
        }
    }

    /// A required string field that is not blank.
    pub(crate) fn required_text(&mut self, name: &str) -> Option<String> {
        if self.get(name).is_none() {
            self.problem(name, "is required");
            return None;
        }
        let s = self.string(name)?;
        if s.trim().is_empty() {
            self.problem(name, "must not be empty");
            return None;
        }
        Some(s)
    }

    /// An optional person's name (`userId`).
    pub(crate) fn name(&mut self, name: &str) -> Option<String> {
        let s = self.string(name)?;
        match name_problem(&s) {
            Some(p) => {
                self.problem(name, p);
                None
            }
            None => Some(s),
        }
    }

    /// An optional string without NUL characters.
    pub(crate) fn plain_string(&mut self, name: &str) -> Option<String> {
        let s = self.string(name)?;
        if s.contains('\0') {
            self.problem(name, "must not contain NUL characters");
            return None;
        }
        Some(s)
    }

    /// `value` when no field had a problem, else the 400 naming them.
    pub(crate) fn finish<T>(self, value: Option<T>) -> Result<T, ApiError> {
        match value {
            Some(value) if self.details.is_empty() => Ok(value),
            _ => Err(ApiError::invalid(self.details)),
        }
    }
}
