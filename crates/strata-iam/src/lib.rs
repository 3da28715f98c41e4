//! Identity and access: the AWS policy language, compiled once and evaluated per request.
//! Pure and synchronous: no I/O, no clock (the caller puts the time in the request's condition
//! keys), no global state.
//!
//! # Map
//!
//! - [`policy`]: a JSON document → [`Policy`] (statements with compiled matchers), or a
//!   [`PolicyError`] saying where it is wrong (`Statement[1].Condition.StringLikee: unknown
//!   condition operator`; JSON syntax errors, duplicate keys included, by line and column).
//!   [`PolicyKind`] picks the rules:
//!   identity policies name no principal and hold at most [`IDENTITY_POLICY_SIZE_MAX`]; a bucket
//!   policy's statements name `Principal`s, its resources lie in the bucket, and it holds at most
//!   [`BUCKET_POLICY_SIZE_MAX`].
//! - [`pattern`]: the wildcard matcher (`*`, `?`, `${key}` variables, `${*}` `${?}` `${$}`
//!   escapes) behind actions, resources, `StringLike` and `ArnLike`.
//! - [`condition`]: every condition operator, `...IfExists`, `ForAnyValue:`/`ForAllValues:`, and
//!   AWS's rules for missing and multi-valued keys; [`scalar`] parses their typed operands
//!   (numbers, ISO 8601 or epoch dates, booleans, CIDR blocks).
//! - [`action`]: the action vocabulary: S3 as AWS names it, `sts:`, and Strata's `admin:`.
//! - [`context`]: the question: a [`Request`] = action + resource ARN + [`Principal`] +
//!   [`ConditionValues`] (`aws:SourceIp`, `s3:prefix`, ...; keys case-insensitive).
//! - [`eval`]: the answer: [`evaluate`] (explicit deny wins, then any allow, else implicit deny)
//!   and [`evaluate_narrowed`] (session and service-account policies intersect with the parent's).
//! - [`builtin`]: the built-in policies.
//! - [`state`]: [`IamState`], users (by access key), groups, named policies, service accounts
//!   and sessions as one serializable value, changed only through checked methods
//!   ([`IamError`]); [`directory`]: [`Directory`], its compiled snapshot, which resolves an
//!   access key to a [`Caller`] (secret, principal, policies, narrowing policy) and authorizes.
//!
//! # Built-in policies
//!
//! | name | grants |
//! |---|---|
//! | `readonly` | `s3:GetObject` and `s3:GetBucketLocation` on every bucket: download what you know the name of; no listing |
//! | `readwrite` | `s3:*` on every bucket and object; no administration |
//! | `writeonly` | `s3:PutObject` on every bucket (simple and multipart uploads); nothing else |
//! | `diagnostics` | read-only administration: server, storage and usage information, traces, logs, profiles, metrics, locks, bandwidth, health |
//! | `consoleAdmin` | everything: `s3:*`, `admin:*`, `sts:*` |
//!
//! # Invariants
//!
//! - Outside documents never panic the parser or the evaluator (fuzzed in
//!   `tests/fuzz_policy.rs`); every refusal is a [`PolicyError`].
//! - Evaluation allocates nothing per match: patterns are compiled at parse time, request
//!   values are borrowed, and condition operands are typed once.
//! - A policy variable the request has no single value for, or an unparseable request value,
//!   never matches: it can make an `Allow` fail but never grant.
//! - Actions with no resource (ListAllMyBuckets, `admin:`, `sts:`) are matched as the resource
//!   [`context::NO_RESOURCE`] (`arn:aws:s3:::`), which `*` and `arn:aws:s3:::*` cover.

pub mod action;
pub mod builtin;
pub mod condition;
pub mod context;
pub mod directory;
pub mod error;
pub mod eval;
mod json;
pub mod pattern;
pub mod policy;
pub mod scalar;
pub mod state;

pub use context::{normalize_key, ConditionValues, Principal, PrincipalKind, Request, Values};
pub use directory::{Caller, CredentialError, Directory};
pub use error::PolicyError;
pub use eval::{evaluate, evaluate_narrowed, Decision};
pub use policy::{Effect, Policy, PolicyKind, Version, BUCKET_POLICY_SIZE_MAX, IDENTITY_POLICY_SIZE_MAX};
pub use state::{IamError, IamState, Secret, Status, Target};
