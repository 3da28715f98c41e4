//! Every state change: its checks, what it refuses, and what it cascades.

use super::*;

const READ_B: &str = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}]}"#;

fn state() -> IamState {
    let mut s = IamState::new();
    s.add_user("alice", "alice-secret").expect("alice");
    s.add_user("bob", "bob-secret1").expect("bob");
    s
}

#[test]
fn users() {
    let mut s = state();
    assert_eq!(s.add_user("alice", "another-secret"), Err(IamError::AccessKeyInUse("alice".into())));
    assert_eq!(s.add_user("ab", "long-enough"), Err(IamError::InvalidAccessKey));
    assert_eq!(s.add_user("a b c", "long-enough"), Err(IamError::InvalidAccessKey));
    assert_eq!(s.add_user(&"x".repeat(129), "long-enough"), Err(IamError::InvalidAccessKey));
    assert_eq!(s.add_user("carol", "short"), Err(IamError::InvalidSecret));
    assert_eq!(s.add_user("carol", "has a space"), Err(IamError::InvalidSecret));
    s.set_user_status("bob", Status::Disabled).expect("disable");
    assert_eq!(s.users["bob"].status, Status::Disabled);
    s.set_user_secret("bob", "new-secret").expect("secret");
    assert_eq!(s.users["bob"].secret.expose(), "new-secret");
    assert_eq!(s.set_user_status("nobody", Status::Enabled), Err(IamError::NoSuchUser("nobody".into())));
    assert!(!format!("{:?}", s.users["bob"]).contains("new-secret"), "secrets never print");
    s.validate().expect("valid");
}

#[test]
fn groups() {
    let mut s = state();
    s.add_group_members("devs", &["alice", "bob"]).expect("group");
    assert_eq!(s.groups_of("alice").map(|(n, _)| n).collect::<Vec<_>>(), ["devs"]);
    assert_eq!(s.add_group_members("devs", &["carol"]), Err(IamError::NoSuchUser("carol".into())));
    assert_eq!(s.add_group_members("bad name", &[]), Err(IamError::InvalidName("bad name".into())));
    assert_eq!(s.remove_group("devs"), Err(IamError::GroupNotEmpty("devs".into())));
    s.remove_group_members("devs", &["bob"]).expect("remove");
    s.remove_user("alice").expect("remove user");
    assert!(s.groups["devs"].members.is_empty(), "a removed user leaves its groups");
    s.set_group_status("devs", Status::Disabled).expect("status");
    s.remove_group("devs").expect("empty group");
    assert_eq!(s.remove_group("devs"), Err(IamError::NoSuchGroup("devs".into())));
    s.validate().expect("valid");
}

#[test]
fn policies() {
    let mut s = state();
    s.set_policy("read-b", READ_B).expect("policy");
    assert_eq!(s.set_policy("readonly", READ_B), Err(IamError::BuiltinPolicy("readonly".into())));
    let bad = s.set_policy("bad", r#"{"Statement":{"Effect":"Maybe","Action":"*","Resource":"*"}}"#);
    assert!(
        matches!(&bad, Err(IamError::MalformedPolicy(e)) if e.location() == "Statement.Effect"),
        "{bad:?}"
    );
    s.attach(Target::User("alice"), &["read-b", "readonly"]).expect("attach");
    assert_eq!(s.attach(Target::User("alice"), &["nope"]), Err(IamError::NoSuchPolicy("nope".into())));
    assert_eq!(s.attach(Target::Group("devs"), &["read-b"]), Err(IamError::NoSuchGroup("devs".into())));
    assert_eq!(s.remove_policy("read-b"), Err(IamError::PolicyInUse("read-b".into())));
    assert_eq!(s.remove_policy("readwrite"), Err(IamError::BuiltinPolicy("readwrite".into())));
    s.detach(Target::User("alice"), &["read-b"]).expect("detach");
    s.remove_policy("read-b").expect("remove");
    assert_eq!(s.remove_policy("read-b"), Err(IamError::NoSuchPolicy("read-b".into())));
    for i in 0..ATTACHED_POLICIES_MAX {
        s.set_policy(&format!("p{i}"), READ_B).expect("policy");
    }
    let names: Vec<String> = (0..ATTACHED_POLICIES_MAX).map(|i| format!("p{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    assert_eq!(
        s.attach(Target::User("alice"), &names),
        Err(IamError::TooManyPolicies),
        "readonly counts too"
    );
    assert_eq!(s.users["alice"].policies.len(), 1, "all or nothing");
    s.attach(Target::User("bob"), &names).expect("exactly the limit fits");
    s.validate().expect("valid");
}

#[test]
fn service_accounts_and_sessions() {
    let mut s = state();
    let now = 1_000;
    s.add_service_account("svc-1", "svc-secret", "alice", Some(READ_B), Some(2_000), now).expect("svc");
    assert_eq!(
        s.add_service_account("alice", "svc-secret", "alice", None, None, now),
        Err(IamError::AccessKeyInUse("alice".into()))
    );
    assert_eq!(
        s.add_service_account("svc-2", "svc-secret", "carol", None, None, now),
        Err(IamError::NoSuchUser("carol".into()))
    );
    assert_eq!(
        s.add_service_account("svc-2", "svc-secret", "alice", None, Some(now), now),
        Err(IamError::ExpiryInPast)
    );
    assert!(matches!(
        s.add_service_account("svc-2", "svc-secret", "alice", Some("{"), None, now),
        Err(IamError::MalformedPolicy(_))
    ));
    let session = |parent: &str, expiry| Session {
        secret: Secret::new("session-secret").expect("secret"),
        token: Secret::new("token-token").expect("token"),
        parent: parent.to_owned(),
        name: "s".to_owned(),
        policy: None,
        expiry,
        federated_policies: None,
    };
    s.add_session("ASIA1", session("bob", 1_500), now).expect("session");
    assert_eq!(s.add_session("ASIA2", session("bob", 900), now), Err(IamError::ExpiryInPast));
    assert_eq!(
        s.add_session("svc-1", session("bob", 1_500), now),
        Err(IamError::AccessKeyInUse("svc-1".into()))
    );
    s.validate().expect("valid");
    assert_eq!(s.remove_expired(1_600), 1, "the session expired");
    assert_eq!(s.remove_expired(2_000), 1, "then the service account");
    s.add_service_account("svc-3", "svc-secret", "alice", None, None, now).expect("svc");
    s.add_session("ASIA3", session("alice", 5_000), now).expect("session");
    s.remove_user("alice").expect("remove");
    assert!(s.service_accounts.is_empty() && s.sessions.is_empty(), "a removed user's keys go with it");
    assert_eq!(s.remove_service_account("svc-3"), Err(IamError::NoSuchServiceAccount("svc-3".into())));
}

#[test]
fn round_trip_and_validation_of_stored_state() {
    let mut s = state();
    s.set_policy("read-b", READ_B).expect("policy");
    s.add_group_members("devs", &["alice"]).expect("group");
    s.attach(Target::Group("devs"), &["read-b"]).expect("attach");
    s.add_service_account("svc-1", "svc-secret", "alice", Some(READ_B), None, 0).expect("svc");
    let json = serde_json::to_string(&s).expect("serialize");
    let back: IamState = serde_json::from_str(&json).expect("deserialize");
    assert_eq!(back, s);
    back.validate().expect("valid");
    let broken = |f: &dyn Fn(&mut IamState)| {
        let mut t = s.clone();
        f(&mut t);
        t.validate().expect_err("refused")
    };
    assert_eq!(broken(&|t| t.format_version = 9), IamError::UnsupportedVersion(9));
    assert!(matches!(
        broken(&|t| {
            t.users.remove("alice");
        }),
        IamError::Inconsistent(_)
    ));
    assert!(matches!(
        broken(&|t| {
            t.policies.remove("read-b");
        }),
        IamError::Inconsistent(_)
    ));
    assert!(matches!(
        broken(&|t| {
            t.policies.insert("x".into(), "[]".into());
        }),
        IamError::MalformedPolicy(_)
    ));
    let dup = broken(&|t| {
        let svc = t.service_accounts["svc-1"].clone();
        t.service_accounts.insert("bob".into(), svc);
    });
    assert_eq!(dup, IamError::Inconsistent("access key \"bob\" used twice".into()));
}

#[test]
fn a_service_account_update_is_all_or_nothing() {
    let mut s = IamState::new();
    s.add_user("carol", "carol-secret").expect("user");
    s.add_service_account("svckey01", "svc-secret-1", "carol", None, None, 100).expect("account");
    let before = s.service_accounts["svckey01"].clone();
    let bad_policy = ServiceAccountChange {
        secret: Some("svc-secret-2"),
        policy: Some(Some("{not a policy")),
        ..Default::default()
    };
    assert!(s.update_service_account("svckey01", &bad_policy, 100).is_err());
    let past = ServiceAccountChange { secret: Some("svc-secret-2"), expiry: Some(50), ..Default::default() };
    assert!(matches!(s.update_service_account("svckey01", &past, 100), Err(IamError::ExpiryInPast)));
    assert_eq!(s.service_accounts["svckey01"], before, "a refused update changed the account");
    let good = ServiceAccountChange {
        secret: Some("svc-secret-2"),
        status: Some(Status::Disabled),
        name: Some("ci"),
        description: Some(""),
        expiry: Some(500),
        ..Default::default()
    };
    s.update_service_account("svckey01", &good, 100).expect("update");
    let after = &s.service_accounts["svckey01"];
    assert_eq!(after.secret.expose(), "svc-secret-2");
    assert_eq!(
        (after.status, after.expiry, after.name.as_deref(), after.description.as_deref()),
        (Status::Disabled, Some(500), Some("ci"), None)
    );
    let narrow =
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"*"}]}"#;
    s.update_service_account(
        "svckey01",
        &ServiceAccountChange { policy: Some(Some(narrow)), ..Default::default() },
        100,
    )
    .expect("policy");
    assert_eq!(s.service_accounts["svckey01"].policy.as_deref(), Some(narrow));
    s.update_service_account(
        "svckey01",
        &ServiceAccountChange { policy: Some(None), ..Default::default() },
        100,
    )
    .expect("no policy");
    assert_eq!(s.service_accounts["svckey01"].policy, None);
    assert!(matches!(
        s.update_service_account("missing", &ServiceAccountChange::default(), 100),
        Err(IamError::NoSuchServiceAccount(_))
    ));
}
