//! Credentials resolve to the right principal and policies; refusals are the right ones.

use super::*;
use crate::state::{Secret, Session, Target};

const READ_B: &str = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}]}"#;
const ONLY_X: &str = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"arn:aws:s3:::b/x*"}]}"#;

fn directory() -> Directory {
    let mut s = IamState::new();
    s.add_user("alice", "alice-secret").expect("alice");
    s.add_user("bob", "bob-secret1").expect("bob");
    s.set_policy("read-b", READ_B).expect("policy");
    s.add_group_members("writers", &["alice"]).expect("group");
    s.attach(Target::Group("writers"), &["writeonly"]).expect("attach");
    s.attach(Target::User("alice"), &["read-b"]).expect("attach");
    s.add_service_account("svc-narrow", "svc-secret", "alice", Some(ONLY_X), None, 0).expect("svc");
    s.add_service_account("svc-old", "svc-secret", "alice", None, Some(100), 0).expect("svc");
    let session = Session {
        secret: Secret::new("session-secret").expect("secret"),
        token: Secret::new("the-session-token").expect("token"),
        parent: "alice".into(),
        name: "job".into(),
        policy: None,
        expiry: 500,
    };
    s.add_session("ASIA1", session, 0).expect("session");
    Directory::new(s).expect("directory")
}

fn may(d: &Directory, key: &str, action: &str, resource: &str) -> bool {
    let token = (key == "ASIA1").then_some("the-session-token");
    let caller = d.caller(key, token, 50).expect("caller");
    caller.authorize(action, Some(resource), &ConditionValues::new(), None).is_allowed()
}

#[test]
fn users_get_their_own_and_their_groups_policies() {
    let d = directory();
    let alice = d.caller("alice", None, 50).expect("alice");
    assert_eq!((alice.secret, alice.principal.name.as_str()), ("alice-secret", "alice"));
    assert!(may(&d, "alice", "s3:GetObject", "arn:aws:s3:::b/k"), "own policy");
    assert!(may(&d, "alice", "s3:PutObject", "arn:aws:s3:::other/k"), "group policy");
    assert!(!may(&d, "alice", "s3:DeleteObject", "arn:aws:s3:::b/k"));
    assert!(!may(&d, "bob", "s3:GetObject", "arn:aws:s3:::b/k"), "no policy, no access");
    // A disabled group's policies stop applying.
    let mut s = d.state().clone();
    s.set_group_status("writers", Status::Disabled).expect("status");
    let d = Directory::new(s).expect("directory");
    assert!(!may(&d, "alice", "s3:PutObject", "arn:aws:s3:::other/k"));
    assert!(may(&d, "alice", "s3:GetObject", "arn:aws:s3:::b/k"));
}

#[test]
fn service_accounts_and_sessions_act_for_their_parent() {
    let d = directory();
    let svc = d.caller("svc-narrow", None, 50).expect("svc");
    assert_eq!(svc.principal.name, "alice");
    assert!(may(&d, "svc-narrow", "s3:GetObject", "arn:aws:s3:::b/x1"), "parent and own policy allow");
    assert!(!may(&d, "svc-narrow", "s3:GetObject", "arn:aws:s3:::b/y1"), "own policy narrows");
    assert!(!may(&d, "svc-narrow", "s3:DeleteObject", "arn:aws:s3:::b/x1"), "never beyond the parent");
    let session = d.caller("ASIA1", Some("the-session-token"), 50).expect("session");
    assert_eq!(session.principal.kind, crate::PrincipalKind::AssumedRole);
    assert!(may(&d, "ASIA1", "s3:GetObject", "arn:aws:s3:::b/k"), "no session policy: the parent's rights");
}

#[test]
fn refusals() {
    let d = directory();
    let err = |key: &str, token: Option<&str>, now: u64| {
        d.caller(key, token, now).map(|_| ()).expect_err("refused")
    };
    assert_eq!(err("nobody", None, 50), CredentialError::UnknownAccessKey);
    assert_eq!(err("svc-old", None, 100), CredentialError::Expired);
    assert_eq!(err("ASIA1", Some("the-session-token"), 500), CredentialError::Expired);
    assert_eq!(err("ASIA1", None, 50), CredentialError::InvalidToken);
    assert_eq!(err("ASIA1", Some("the-session-tokeN"), 50), CredentialError::InvalidToken);
    let mut s = d.state().clone();
    s.set_user_status("alice", Status::Disabled).expect("status");
    let d = Directory::new(s).expect("directory");
    let err = |key: &str, token: Option<&str>| d.caller(key, token, 50).map(|_| ()).expect_err("refused");
    assert_eq!(err("alice", None), CredentialError::Disabled);
    assert_eq!(err("svc-narrow", None), CredentialError::Disabled, "a disabled user's keys stop working");
    assert_eq!(err("ASIA1", Some("the-session-token")), CredentialError::Disabled);
}

#[test]
fn a_corrupt_stored_state_is_refused() {
    let mut s = directory().state().clone();
    s.groups.get_mut("writers").expect("group").members.insert("ghost".into());
    assert!(matches!(Directory::new(s), Err(IamError::Inconsistent(_))));
}
