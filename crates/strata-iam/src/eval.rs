//! Evaluation as AWS documents it for one account: every applicable policy is consulted; an
//! explicit `Deny` in any of them wins; otherwise an `Allow` from any of them (the identity's
//! policies, or a bucket policy whose `Principal` names the caller) grants; otherwise the
//! request is implicitly denied. Session and service-account policies narrow: a request they
//! do not allow is denied whatever the parent's policies say.
//!
//! Root is not special here: the server lets its root user through before asking.

use crate::context::Request;
use crate::policy::{Effect, Policy};

/// The answer to one [`Request`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// A `Deny` statement applies: nothing can grant this request.
    ExplicitDeny,
    /// No statement allows it.
    ImplicitDeny,
}

impl Decision {
    pub fn is_allowed(self) -> bool {
        self == Decision::Allow
    }
}

impl Policy {
    /// What this policy alone says: `Deny` when a deny statement applies, else `Allow` when an
    /// allow statement applies, else nothing.
    pub fn verdict(&self, request: &Request) -> Option<Effect> {
        let mut verdict = None;
        for statement in self.statements.iter() {
            if statement.applies(request) {
                match statement.effect {
                    Effect::Deny => return Some(Effect::Deny),
                    Effect::Allow => verdict = Some(Effect::Allow),
                }
            }
        }
        verdict
    }
}

/// Evaluates `request` against the caller's identity policies (its own and its groups') and the
/// bucket's policy, if any.
pub fn evaluate<'p>(
    request: &Request,
    identity: impl IntoIterator<Item = &'p Policy>,
    bucket: Option<&'p Policy>,
) -> Decision {
    let mut allowed = false;
    for policy in identity.into_iter().chain(bucket) {
        match policy.verdict(request) {
            Some(Effect::Deny) => return Decision::ExplicitDeny,
            Some(Effect::Allow) => allowed = true,
            None => {}
        }
    }
    if allowed {
        Decision::Allow
    } else {
        Decision::ImplicitDeny
    }
}

/// Evaluates a request of temporary credentials or a service account: the parent's decision
/// ([`evaluate`] over the parent's policies and the bucket policy) intersected with the session
/// or service-account policy, when there is one. Allowed only when both allow; a deny in either
/// is explicit.
pub fn evaluate_narrowed<'p>(
    request: &Request,
    identity: impl IntoIterator<Item = &'p Policy>,
    bucket: Option<&'p Policy>,
    narrowing: Option<&Policy>,
) -> Decision {
    let parent = evaluate(request, identity, bucket);
    let Some(narrowing) = narrowing else { return parent };
    match (parent, narrowing.verdict(request)) {
        (Decision::ExplicitDeny, _) | (_, Some(Effect::Deny)) => Decision::ExplicitDeny,
        (Decision::Allow, Some(Effect::Allow)) => Decision::Allow,
        _ => Decision::ImplicitDeny,
    }
}
