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
        federated_policies: None,
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

#[test]
fn federated_sessions_hold_the_policies_their_token_named() {
    let mut s = directory().state().clone();
    let federated = |policies: &[&str], policy: Option<&str>| Session {
        secret: Secret::new("fed-secret").expect("secret"),
        token: Secret::new("the-fed-token").expect("token"),
        parent: "oidc-subject-42".into(),
        name: "web".into(),
        policy: policy.map(str::to_owned),
        expiry: 500,
        federated_policies: Some(policies.iter().map(|p| (*p).to_owned()).collect()),
    };
    assert_eq!(
        s.add_session("FED0", federated(&["no-such"], None), 0),
        Err(IamError::NoSuchPolicy("no-such".into()))
    );
    s.add_session("FED1", federated(&["read-b"], None), 0).expect("no user needed");
    s.add_session("FED2", federated(&["readwrite"], Some(ONLY_X)), 0).expect("narrowed");
    assert_eq!(s.remove_policy("read-b"), Err(IamError::PolicyInUse("read-b".into())));
    let d = Directory::new(s).expect("a federated session validates");
    let fed = |key: &str, action: &str, resource: &str| {
        let caller = d.caller(key, Some("the-fed-token"), 50).expect("caller");
        assert_eq!(caller.principal.arn, "arn:aws:sts:::assumed-role/oidc-subject-42/web");
        caller.authorize(action, Some(resource), &ConditionValues::new(), None).is_allowed()
    };
    assert!(fed("FED1", "s3:GetObject", "arn:aws:s3:::b/k"));
    assert!(!fed("FED1", "s3:PutObject", "arn:aws:s3:::b/k"));
    assert!(fed("FED2", "s3:PutObject", "arn:aws:s3:::b/x1"));
    assert!(!fed("FED2", "s3:PutObject", "arn:aws:s3:::b/y"), "narrowed by its session policy");
    assert_eq!(d.caller("FED1", Some("the-fed-token"), 500).map(|_| ()), Err(CredentialError::Expired));
    assert_eq!(d.caller("FED1", Some("wrong-token"), 50).map(|_| ()), Err(CredentialError::InvalidToken));
}
