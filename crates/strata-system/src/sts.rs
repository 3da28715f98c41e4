//! Temporary credentials: a session stored with the rest of the IAM state (so it works on every
//! node), acting as its parent (an IAM user, or the policies a web identity's token names),
//! narrowed by an optional session policy, until its expiry, after which it is dropped. STS's
//! HTTP surface (the form, its signature, the XML answer) is the S3 crate's.

use std::collections::BTreeSet;

use strata_iam::state::Session;
use strata_iam::Secret;
use strata_object::ObjectLayer;

use crate::credentials::{random_string, ACCESS_KEY_ALPHABET, SECRET_ALPHABET};
use crate::iam::{Iam, StoreError};

/// What a session is asked for (validated by the caller: STS's rules for each field).
#[derive(Debug, Clone)]
pub struct SessionRequest {
    /// Seconds the credentials stay valid.
    pub duration_secs: u64,
    /// `RoleSessionName`.
    pub name: String,
    /// A policy document narrowing the parent's rights.
    pub policy: Option<String>,
}

/// New temporary credentials, stored.
#[derive(Debug, Clone)]
pub struct Issued {
    pub access_key: String,
    pub secret: String,
    pub token: String,
    pub parent: String,
    pub name: String,
    /// Unix seconds.
    pub expiry: u64,
}

/// Makes credentials for `parent` (a user; with `federated`, the named policies), valid from
/// `now` (Unix seconds), and stores them in the IAM state. The caller tells the other nodes.
pub async fn issue(
    iam: &Iam,
    layer: &ObjectLayer,
    parent: String,
    request: SessionRequest,
    federated: Option<BTreeSet<String>>,
    now: u64,
) -> Result<Issued, StoreError> {
    let issued = Issued {
        access_key: random_string(ACCESS_KEY_ALPHABET, 20)?,
        secret: random_string(SECRET_ALPHABET, 40)?,
        token: random_string(SECRET_ALPHABET, 96)?,
        parent,
        name: request.name,
        expiry: now + request.duration_secs,
    };
    let session = Session {
        secret: Secret::new(&issued.secret)?,
        token: Secret::new(&issued.token)?,
        parent: issued.parent.clone(),
        name: issued.name.clone(),
        policy: request.policy,
        expiry: issued.expiry,
        federated_policies: federated,
    };
    iam.change(layer, |s| s.add_session(&issued.access_key, session.clone(), now)).await?;
    Ok(issued)
}
