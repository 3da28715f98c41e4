//! The IAM state: users, groups, named policies, service accounts and temporary sessions, as
//! one plain serializable value. Every change goes through a method that checks it (names,
//! secrets, references, duplicates), so a state built by these methods always satisfies
//! [`IamState::validate`]; a state read back from storage is validated before use.
//!
//! A user is known by its access key (its name, as in MinIO: `aws:username` is the access
//! key). Group membership is kept on the group only, so it cannot disagree with itself.
//! Secrets travel in [`Secret`], whose `Debug` never shows them; the state is sealed as a whole
//! by whoever stores it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::builtin;
use crate::error::PolicyError;
use crate::policy::{Policy, PolicyKind};

pub use strata_types::limits::{
    ATTACHED_POLICIES_MAX, IAM_ACCESS_KEY_LEN_MIN, IAM_NAME_LEN_MAX, IAM_SECRET_LEN_MAX, IAM_SECRET_LEN_MIN,
};

/// The version of the serialized state; bumped when its shape changes.
pub const STATE_FORMAT_VERSION: u32 = 1;

/// A secret key. `Debug` prints `Secret(..)`: secrets never reach logs.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Secret(String);

impl Secret {
    pub fn new(secret: &str) -> Result<Secret, IamError> {
        let ok = (IAM_SECRET_LEN_MIN..=IAM_SECRET_LEN_MAX).contains(&secret.len())
            && secret.bytes().all(|b| b.is_ascii_graphic());
        if ok {
            Ok(Secret(secret.to_owned()))
        } else {
            Err(IamError::InvalidSecret)
        }
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Status {
    Enabled,
    Disabled,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    pub secret: Secret,
    pub status: Status,
    /// Names of attached policies (named or built-in).
    pub policies: BTreeSet<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Group {
    pub members: BTreeSet<String>,
    pub status: Status,
    pub policies: BTreeSet<String>,
}

/// An access key that acts as its parent user, optionally narrowed by its own policy and
/// optionally expiring.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceAccount {
    pub secret: Secret,
    pub parent: String,
    pub status: Status,
    /// An identity policy document that narrows the parent's rights.
    pub policy: Option<String>,
    /// Unix seconds after which the key no longer works.
    pub expiry: Option<u64>,
    /// A name and a description for people (MinIO's `mc admin user svcacct add --name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// What changes in a service account (`None`: unchanged).
#[derive(Debug, Clone, Default)]
pub struct ServiceAccountChange<'a> {
    pub secret: Option<&'a str>,
    /// `Some(None)` removes the account's own policy (it acts as its parent again).
    pub policy: Option<Option<&'a str>>,
    pub status: Option<Status>,
    pub expiry: Option<u64>,
    pub name: Option<&'a str>,
    pub description: Option<&'a str>,
}

/// Temporary credentials (STS): like a service account, but always expiring and checked with
/// their session token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    pub secret: Secret,
    pub token: Secret,
    pub parent: String,
    pub name: String,
    pub policy: Option<String>,
    pub expiry: u64,
    /// Federated credentials (OpenID Connect, `AssumeRoleWithWebIdentity`): `parent` is the
    /// token's subject, no user, and these named policies (from the token's policy claim) are
    /// the session's rights. `None`: the session acts for the IAM user `parent`.
    #[serde(default)]
    pub federated_policies: Option<BTreeSet<String>>,
}

/// Why an IAM change was refused (each maps to one IAM/S3 error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IamError {
    #[error("invalid name {0:?}: 1 to 128 of A-Z a-z 0-9 and + = , . @ _ -")]
    InvalidName(String),
    #[error("access keys are 3 to 128 of A-Z a-z 0-9 and + = , . @ _ -")]
    InvalidAccessKey,
    #[error("secret keys are 8 to 128 printable characters without spaces")]
    InvalidSecret,
    #[error("the access key {0:?} is already in use")]
    AccessKeyInUse(String),
    #[error("no such user {0:?}")]
    NoSuchUser(String),
    #[error("no such group {0:?}")]
    NoSuchGroup(String),
    #[error("no such policy {0:?}")]
    NoSuchPolicy(String),
    #[error("no such service account {0:?}")]
    NoSuchServiceAccount(String),
    #[error("the policy {0:?} already exists")]
    PolicyExists(String),
    #[error("{0:?} is a built-in policy and cannot be changed")]
    BuiltinPolicy(String),
    #[error("the policy {0:?} is attached; detach it first")]
    PolicyInUse(String),
    #[error("the group {0:?} has members; remove them first")]
    GroupNotEmpty(String),
    #[error("more than {ATTACHED_POLICIES_MAX} policies attached")]
    TooManyPolicies,
    #[error("the expiry is in the past")]
    ExpiryInPast,
    #[error("malformed policy: {0}")]
    MalformedPolicy(#[from] PolicyError),
    #[error("state format version {0} is not supported")]
    UnsupportedVersion(u32),
    #[error("inconsistent state: {0}")]
    Inconsistent(String),
}

/// Who a policy is attached to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target<'a> {
    User(&'a str),
    Group(&'a str),
}

/// Every identity and policy of a deployment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IamState {
    pub format_version: u32,
    pub users: BTreeMap<String, User>,
    pub groups: BTreeMap<String, Group>,
    /// Named policy documents (the built-in ones are not stored).
    pub policies: BTreeMap<String, String>,
    /// By access key.
    pub service_accounts: BTreeMap<String, ServiceAccount>,
    /// By access key.
    pub sessions: BTreeMap<String, Session>,
}

impl Default for IamState {
    fn default() -> IamState {
        IamState {
            format_version: STATE_FORMAT_VERSION,
            users: BTreeMap::new(),
            groups: BTreeMap::new(),
            policies: BTreeMap::new(),
            service_accounts: BTreeMap::new(),
            sessions: BTreeMap::new(),
        }
    }
}

fn name_chars(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_alphanumeric() || b"+=,.@_-".contains(&b))
}

fn check_name(name: &str) -> Result<(), IamError> {
    if (1..=IAM_NAME_LEN_MAX).contains(&name.len()) && name_chars(name) {
        Ok(())
    } else {
        Err(IamError::InvalidName(name.to_owned()))
    }
}

fn check_access_key(key: &str) -> Result<(), IamError> {
    if (IAM_ACCESS_KEY_LEN_MIN..=IAM_NAME_LEN_MAX).contains(&key.len()) && name_chars(key) {
        Ok(())
    } else {
        Err(IamError::InvalidAccessKey)
    }
}

/// Parses a narrowing (service-account or session) policy, so a bad one is refused up front.
fn check_document(document: &str) -> Result<(), IamError> {
    Policy::parse(document.as_bytes(), PolicyKind::Identity)?;
    Ok(())
}

impl IamState {
    pub fn new() -> IamState {
        IamState::default()
    }

    /// Is `access_key` taken by a user, service account or session?
    pub fn access_key_in_use(&self, access_key: &str) -> bool {
        self.users.contains_key(access_key)
            || self.service_accounts.contains_key(access_key)
            || self.sessions.contains_key(access_key)
    }

    fn fresh_access_key(&self, access_key: &str) -> Result<(), IamError> {
        check_access_key(access_key)?;
        if self.access_key_in_use(access_key) {
            return Err(IamError::AccessKeyInUse(access_key.to_owned()));
        }
        Ok(())
    }

    /// Adds an enabled user. The caller refuses the root user's access key beforehand (the
    /// state does not know it).
    pub fn add_user(&mut self, access_key: &str, secret: &str) -> Result<(), IamError> {
        self.fresh_access_key(access_key)?;
        let secret = Secret::new(secret)?;
        self.users.insert(
            access_key.to_owned(),
            User { secret, status: Status::Enabled, policies: BTreeSet::new() },
        );
        Ok(())
    }

    /// Removes a user with its group memberships, service accounts and sessions.
    pub fn remove_user(&mut self, access_key: &str) -> Result<(), IamError> {
        self.users.remove(access_key).ok_or_else(|| IamError::NoSuchUser(access_key.to_owned()))?;
        for group in self.groups.values_mut() {
            group.members.remove(access_key);
        }
        self.service_accounts.retain(|_, s| s.parent != access_key);
        self.sessions.retain(|_, s| s.parent != access_key);
        Ok(())
    }

    pub fn set_user_status(&mut self, access_key: &str, status: Status) -> Result<(), IamError> {
        self.user_mut(access_key)?.status = status;
        Ok(())
    }

    pub fn set_user_secret(&mut self, access_key: &str, secret: &str) -> Result<(), IamError> {
        let secret = Secret::new(secret)?;
        self.user_mut(access_key)?.secret = secret;
        Ok(())
    }

    fn user_mut(&mut self, access_key: &str) -> Result<&mut User, IamError> {
        self.users.get_mut(access_key).ok_or_else(|| IamError::NoSuchUser(access_key.to_owned()))
    }

    /// Adds `members` to `group`, creating the group (enabled) if needed. All or nothing.
    pub fn add_group_members(&mut self, group: &str, members: &[&str]) -> Result<(), IamError> {
        check_name(group)?;
        if let Some(missing) = members.iter().find(|m| !self.users.contains_key(**m)) {
            return Err(IamError::NoSuchUser((*missing).to_owned()));
        }
        let g = self.groups.entry(group.to_owned()).or_insert_with(|| Group {
            members: BTreeSet::new(),
            status: Status::Enabled,
            policies: BTreeSet::new(),
        });
        g.members.extend(members.iter().map(|m| (*m).to_owned()));
        Ok(())
    }

    pub fn remove_group_members(&mut self, group: &str, members: &[&str]) -> Result<(), IamError> {
        let g = self.group_mut(group)?;
        for m in members {
            g.members.remove(*m);
        }
        Ok(())
    }

    /// Removes an empty group.
    pub fn remove_group(&mut self, group: &str) -> Result<(), IamError> {
        if !self.group_mut(group)?.members.is_empty() {
            return Err(IamError::GroupNotEmpty(group.to_owned()));
        }
        self.groups.remove(group);
        Ok(())
    }

    pub fn set_group_status(&mut self, group: &str, status: Status) -> Result<(), IamError> {
        self.group_mut(group)?.status = status;
        Ok(())
    }

    fn group_mut(&mut self, group: &str) -> Result<&mut Group, IamError> {
        self.groups.get_mut(group).ok_or_else(|| IamError::NoSuchGroup(group.to_owned()))
    }

    /// The groups `access_key` belongs to.
    pub fn groups_of<'s>(&'s self, access_key: &'s str) -> impl Iterator<Item = (&'s str, &'s Group)> + 's {
        self.groups.iter().filter(move |(_, g)| g.members.contains(access_key)).map(|(n, g)| (n.as_str(), g))
    }

    /// Creates or replaces a named policy after checking the document.
    pub fn set_policy(&mut self, name: &str, document: &str) -> Result<(), IamError> {
        check_name(name)?;
        if builtin::document(name).is_some() {
            return Err(IamError::BuiltinPolicy(name.to_owned()));
        }
        check_document(document)?;
        self.policies.insert(name.to_owned(), document.to_owned());
        Ok(())
    }

    /// Removes a named policy that nothing is attached to.
    pub fn remove_policy(&mut self, name: &str) -> Result<(), IamError> {
        if builtin::document(name).is_some() {
            return Err(IamError::BuiltinPolicy(name.to_owned()));
        }
        if !self.policies.contains_key(name) {
            return Err(IamError::NoSuchPolicy(name.to_owned()));
        }
        let attached = self.users.values().any(|u| u.policies.contains(name))
            || self.groups.values().any(|g| g.policies.contains(name))
            || self
                .sessions
                .values()
                .any(|s| s.federated_policies.as_ref().is_some_and(|p| p.contains(name)));
        if attached {
            return Err(IamError::PolicyInUse(name.to_owned()));
        }
        self.policies.remove(name);
        Ok(())
    }

    /// Is `name` a policy (named or built-in)?
    pub fn policy_exists(&self, name: &str) -> bool {
        self.policies.contains_key(name) || builtin::document(name).is_some()
    }

    /// Attaches policies to a user or group. All or nothing.
    pub fn attach(&mut self, target: Target, names: &[&str]) -> Result<(), IamError> {
        if let Some(missing) = names.iter().find(|n| !self.policy_exists(n)) {
            return Err(IamError::NoSuchPolicy((*missing).to_owned()));
        }
        let attached = self.attached_mut(target)?;
        let mut after = attached.clone();
        after.extend(names.iter().map(|n| (*n).to_owned()));
        if after.len() > ATTACHED_POLICIES_MAX {
            return Err(IamError::TooManyPolicies);
        }
        *attached = after;
        Ok(())
    }

    pub fn detach(&mut self, target: Target, names: &[&str]) -> Result<(), IamError> {
        let attached = self.attached_mut(target)?;
        for n in names {
            attached.remove(*n);
        }
        Ok(())
    }

    fn attached_mut(&mut self, target: Target) -> Result<&mut BTreeSet<String>, IamError> {
        match target {
            Target::User(u) => Ok(&mut self.user_mut(u)?.policies),
            Target::Group(g) => Ok(&mut self.group_mut(g)?.policies),
        }
    }

    /// Adds a service account of user `parent`. `now` (Unix seconds) checks the expiry.
    pub fn add_service_account(
        &mut self,
        access_key: &str,
        secret: &str,
        parent: &str,
        policy: Option<&str>,
        expiry: Option<u64>,
        now: u64,
    ) -> Result<(), IamError> {
        self.fresh_access_key(access_key)?;
        let secret = Secret::new(secret)?;
        if !self.users.contains_key(parent) {
            return Err(IamError::NoSuchUser(parent.to_owned()));
        }
        if let Some(doc) = policy {
            check_document(doc)?;
        }
        if expiry.is_some_and(|e| e <= now) {
            return Err(IamError::ExpiryInPast);
        }
        let account = ServiceAccount {
            secret,
            parent: parent.to_owned(),
            status: Status::Enabled,
            policy: policy.map(str::to_owned),
            expiry,
            name: None,
            description: None,
        };
        self.service_accounts.insert(access_key.to_owned(), account);
        Ok(())
    }

    /// Changes a service account: its secret, policy, status, expiry (checked against `now`,
    /// Unix seconds), name or description. Nothing changes when any part is refused.
    pub fn update_service_account(
        &mut self,
        access_key: &str,
        change: &ServiceAccountChange<'_>,
        now: u64,
    ) -> Result<(), IamError> {
        let secret = change.secret.map(Secret::new).transpose()?;
        if let Some(Some(doc)) = change.policy {
            check_document(doc)?;
        }
        if change.expiry.is_some_and(|e| e <= now) {
            return Err(IamError::ExpiryInPast);
        }
        let svc = self
            .service_accounts
            .get_mut(access_key)
            .ok_or_else(|| IamError::NoSuchServiceAccount(access_key.to_owned()))?;
        if let Some(secret) = secret {
            svc.secret = secret;
        }
        if let Some(policy) = change.policy {
            svc.policy = policy.map(str::to_owned);
        }
        if let Some(status) = change.status {
            svc.status = status;
        }
        if let Some(expiry) = change.expiry {
            svc.expiry = Some(expiry);
        }
        if let Some(name) = change.name {
            svc.name = Some(name.to_owned()).filter(|n| !n.is_empty());
        }
        if let Some(description) = change.description {
            svc.description = Some(description.to_owned()).filter(|d| !d.is_empty());
        }
        Ok(())
    }

    /// Enables or disables one service account (its parent and siblings are untouched).
    pub fn set_service_account_status(&mut self, access_key: &str, status: Status) -> Result<(), IamError> {
        let svc = self
            .service_accounts
            .get_mut(access_key)
            .ok_or_else(|| IamError::NoSuchServiceAccount(access_key.to_owned()))?;
        svc.status = status;
        Ok(())
    }

    pub fn remove_service_account(&mut self, access_key: &str) -> Result<(), IamError> {
        self.service_accounts
            .remove(access_key)
            .map(|_| ())
            .ok_or_else(|| IamError::NoSuchServiceAccount(access_key.to_owned()))
    }

    /// Ends the temporary credentials `access_key` before their expiry (a console sign-out);
    /// whether they were there.
    pub fn remove_session(&mut self, access_key: &str) -> bool {
        self.sessions.remove(access_key).is_some()
    }

    /// Records temporary credentials of user `parent`, valid until `session.expiry`.
    pub fn add_session(&mut self, access_key: &str, session: Session, now: u64) -> Result<(), IamError> {
        self.fresh_access_key(access_key)?;
        match &session.federated_policies {
            None if !self.users.contains_key(&session.parent) => {
                return Err(IamError::NoSuchUser(session.parent));
            }
            Some(names) => {
                if let Some(missing) = names.iter().find(|n| !self.policy_exists(n)) {
                    return Err(IamError::NoSuchPolicy(missing.clone()));
                }
            }
            None => {}
        }
        if let Some(doc) = &session.policy {
            check_document(doc)?;
        }
        if session.expiry <= now {
            return Err(IamError::ExpiryInPast);
        }
        self.sessions.insert(access_key.to_owned(), session);
        Ok(())
    }

    /// Drops sessions and service accounts whose expiry has passed; returns how many.
    pub fn remove_expired(&mut self, now: u64) -> usize {
        let before = self.sessions.len() + self.service_accounts.len();
        self.sessions.retain(|_, s| s.expiry > now);
        self.service_accounts.retain(|_, s| s.expiry.is_none_or(|e| e > now));
        before - self.sessions.len() - self.service_accounts.len()
    }

    /// Checks what the methods keep true; a state read from storage must pass before use.
    pub fn validate(&self) -> Result<(), IamError> {
        if self.format_version != STATE_FORMAT_VERSION {
            return Err(IamError::UnsupportedVersion(self.format_version));
        }
        let bad = |what: String| Err(IamError::Inconsistent(what));
        for (name, doc) in &self.policies {
            check_name(name)?;
            check_document(doc)?;
        }
        let attached =
            self.users.values().map(|u| &u.policies).chain(self.groups.values().map(|g| &g.policies));
        for set in attached {
            if let Some(p) = set.iter().find(|p| !self.policy_exists(p)) {
                return bad(format!("attached policy {p:?} does not exist"));
            }
        }
        for (name, group) in &self.groups {
            check_name(name)?;
            if let Some(m) = group.members.iter().find(|m| !self.users.contains_key(*m)) {
                return bad(format!("group {name:?} lists unknown user {m:?}"));
            }
        }
        for session in self.sessions.values() {
            if let Some(p) = session.federated_policies.iter().flatten().find(|p| !self.policy_exists(p)) {
                return bad(format!("a federated session names unknown policy {p:?}"));
            }
        }
        let parents = self.service_accounts.values().map(|s| (&s.parent, &s.policy));
        let sessions = self.sessions.values().filter(|s| s.federated_policies.is_none());
        for (parent, policy) in parents.chain(sessions.map(|s| (&s.parent, &s.policy))) {
            if !self.users.contains_key(parent) {
                return bad(format!("credentials of unknown user {parent:?}"));
            }
            if let Some(doc) = policy {
                check_document(doc)?;
            }
        }
        let keys = self.users.keys().chain(self.service_accounts.keys()).chain(self.sessions.keys());
        let mut seen = BTreeSet::new();
        for key in keys {
            check_access_key(key)?;
            if !seen.insert(key) {
                return bad(format!("access key {key:?} used twice"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
