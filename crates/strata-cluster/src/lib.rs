//! Deployment shape: endpoints from the command line, erasure-set sizing, format records, and
//! object placement.
//!
//! - [`ellipsis`] expands `{1...4}`, `{01...16}` and `{a...d}` in drive arguments.
//! - [`endpoint`] parses drive arguments (folders or node URLs) into pools.
//! - [`layout`] turns a pool's drive list into equal erasure sets and picks the parity.
//! - [`format`] is the record every drive carries (deployment id, its own id, the layout), and
//!   the start-up rules that check drives agree on it.
//! - [`placement`] maps `bucket/key` to a set and rotates shard order within it.
//!
//! Everything here is pure: callers read and write the format records through drives.

pub mod ellipsis;
pub mod endpoint;
pub mod format;
pub mod layout;
pub mod placement;

pub use format::{Format, FormatError, FormatPlan};
pub use layout::{Layout, LayoutError, SetLayout};
