//! Why a policy was refused, and where.

use std::fmt;

/// A policy document that cannot be used. Its message (`Display`) is what S3 answers as
/// `MalformedPolicy` and IAM as `MalformedPolicyDocument`: where the document is wrong (a path
/// such as `Statement[1].Condition.StringLikee`, or a line and column for JSON syntax) and what
/// is wrong there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError {
    location: String,
    message: String,
}

impl PolicyError {
    pub(crate) fn new(location: impl Into<String>, message: impl Into<String>) -> PolicyError {
        PolicyError { location: location.into(), message: message.into() }
    }

    /// The path to the element at fault (`Statement[0].Effect`); empty for the whole document.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// What is wrong, without the location.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.location.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.location, self.message)
        }
    }
}

impl std::error::Error for PolicyError {}
