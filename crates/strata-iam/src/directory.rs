//! The compiled view of an [`IamState`] that request handling consults: every policy parsed
//! once when the state is loaded or changed, so a request costs a map lookup for its access
//! key and an evaluation, never a parse.
//!
//! [`Directory::caller`] is what replaces the server's `secret(access_key)` lookup: it resolves
//! an access key (user, service account or session) to its secret, its [`Principal`], the
//! policies it holds (its own and its enabled groups', or its parent's) and the policy that
//! narrows them, refusing disabled users, expired keys and wrong session tokens.

use std::collections::BTreeMap;

use crate::builtin;
use crate::context::{ConditionValues, Principal, Request};
use crate::eval::{evaluate_narrowed, Decision};
use crate::policy::{Policy, PolicyKind};
use crate::state::{IamError, IamState, Status};

/// Why credentials were refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CredentialError {
    #[error("the access key does not exist")]
    UnknownAccessKey,
    #[error("the user is disabled")]
    Disabled,
    #[error("the credentials have expired")]
    Expired,
    #[error("the session token is missing or wrong")]
    InvalidToken,
}

/// A compiled, read-only snapshot of the IAM state.
#[derive(Debug)]
pub struct Directory {
    state: IamState,
    /// Named and built-in policies.
    policies: BTreeMap<String, Policy>,
    /// Service-account and session policies, by access key.
    narrowing: BTreeMap<String, Policy>,
}

/// An authenticated caller, ready to be authorized.
#[derive(Debug)]
pub struct Caller<'d> {
    pub principal: Principal,
    /// For the signature check.
    pub secret: &'d str,
    policies: Vec<&'d Policy>,
    narrowing: Option<&'d Policy>,
}

fn compile(document: &str) -> Result<Policy, IamError> {
    Ok(Policy::parse(document.as_bytes(), PolicyKind::Identity)?)
}

impl Directory {
    /// Validates `state` and compiles all of its policies.
    pub fn new(state: IamState) -> Result<Directory, IamError> {
        state.validate()?;
        let mut policies = BTreeMap::new();
        for (name, document) in builtin::BUILTIN {
            policies.insert((*name).to_owned(), compile(document)?);
        }
        for (name, document) in &state.policies {
            policies.insert(name.clone(), compile(document)?);
        }
        let mut narrowing = BTreeMap::new();
        let svc = state.service_accounts.iter().map(|(k, s)| (k, &s.policy));
        for (key, document) in svc.chain(state.sessions.iter().map(|(k, s)| (k, &s.policy))) {
            if let Some(document) = document {
                narrowing.insert(key.clone(), compile(document)?);
            }
        }
        Ok(Directory { state, policies, narrowing })
    }

    pub fn state(&self) -> &IamState {
        &self.state
    }

    /// Resolves `access_key` at time `now` (Unix seconds). Sessions need their `token`.
    pub fn caller(
        &self,
        access_key: &str,
        token: Option<&str>,
        now: u64,
    ) -> Result<Caller<'_>, CredentialError> {
        if let Some(user) = self.state.users.get(access_key) {
            if user.status == Status::Disabled {
                return Err(CredentialError::Disabled);
            }
            return Ok(self.acting_for(
                access_key,
                Principal::user(access_key, access_key),
                user.secret.expose(),
            ));
        }
        if let Some(svc) = self.state.service_accounts.get(access_key) {
            if svc.status == Status::Disabled {
                return Err(CredentialError::Disabled);
            }
            if svc.expiry.is_some_and(|e| e <= now) {
                return Err(CredentialError::Expired);
            }
            let principal = Principal::service_account(&svc.parent, access_key);
            return self
                .parent_enabled(&svc.parent)
                .map(|()| self.acting_for(&svc.parent, principal, svc.secret.expose()));
        }
        if let Some(session) = self.state.sessions.get(access_key) {
            if session.expiry <= now {
                return Err(CredentialError::Expired);
            }
            let given = token.unwrap_or_default().as_bytes();
            if !strata_types::constant_time_eq(given, session.token.expose().as_bytes()) {
                return Err(CredentialError::InvalidToken);
            }
            let principal = Principal::assumed_role(&session.parent, access_key, &session.name);
            if let Some(names) = &session.federated_policies {
                let policies = names.iter().filter_map(|n| self.policies.get(n)).collect();
                let narrowing = self.narrowing.get(access_key);
                return Ok(Caller { principal, secret: session.secret.expose(), policies, narrowing });
            }
            return self
                .parent_enabled(&session.parent)
                .map(|()| self.acting_for(&session.parent, principal, session.secret.expose()));
        }
        Err(CredentialError::UnknownAccessKey)
    }

    fn parent_enabled(&self, parent: &str) -> Result<(), CredentialError> {
        match self.state.users.get(parent) {
            Some(u) if u.status == Status::Enabled => Ok(()),
            Some(_) => Err(CredentialError::Disabled),
            None => Err(CredentialError::UnknownAccessKey),
        }
    }

    /// A caller holding the policies of `user` (its own and its enabled groups').
    fn acting_for<'d>(&'d self, user: &str, principal: Principal, secret: &'d str) -> Caller<'d> {
        let own = self.state.users.get(user).map(|u| u.policies.iter());
        let groups = self.state.groups_of(user).filter(|(_, g)| g.status == Status::Enabled);
        let names = own.into_iter().flatten().chain(groups.flat_map(|(_, g)| g.policies.iter()));
        let policies = names.filter_map(|n| self.policies.get(n)).collect();
        let narrowing = self.narrowing.get(&principal.user_id);
        Caller { principal, secret, policies, narrowing }
    }
}

impl Caller<'_> {
    /// Does one of the caller's own policies (or its session's) condition on a key starting
    /// with `prefix`? See [`Policy::conditions_on`].
    pub fn conditions_on(&self, prefix: &str) -> bool {
        self.policies.iter().chain(self.narrowing.iter()).any(|p| p.conditions_on(prefix))
    }

    /// May this caller do `action` on `resource`, with the request's condition `values` and
    /// the bucket's policy?
    pub fn authorize(
        &self,
        action: &str,
        resource: Option<&str>,
        values: &ConditionValues,
        bucket_policy: Option<&Policy>,
    ) -> Decision {
        let request = Request { action, resource, principal: &self.principal, values };
        evaluate_narrowed(&request, self.policies.iter().copied(), bucket_policy, self.narrowing)
    }
}

#[cfg(test)]
#[path = "directory_tests.rs"]
mod tests;
