//! Power cuts during IAM changes: the IAM state (one sealed object in the system bucket,
//! replaced by a conditional write on each change, `src/iam.rs`) runs on four simulated drives
//! (`strata_drive::sim::SimFs`, EC 2+2) while two writers (two `Iam`s, as two nodes have, on
//! names of their own) each make a seeded series of changes at once (users added, removed,
//! disabled and enabled, policies written and attached, group members added), so their
//! conditional writes race and retry; power cuts are taken at random events of it, and each is
//! booted (half of them harshly: unsynced writes partly kept, torn) and checked:
//! - the state loads (it unseals: no torn or mixed object);
//! - each writer's part of it is the state of its last acknowledged change, or of the one it
//!   had in flight at the cut;
//! - after a heal scan it loads the same, and a new change succeeds on it (nothing is left that
//!   makes every later conditional write fail).
//!
//! `STRATA_CRASH_SEEDS` (default 24 here) sets how many series run.

use strata_drive::sim::{PowerCut, SimFs, SimRng};
use strata_iam::{IamError, IamState, Status, Target};
use strata_object::{HealScope, ObjectLayer};
use strata_system::iam::Iam;

const DRIVES: usize = 4;
const CHANGES: usize = 10;
const CUT_PROBABILITY: f64 = 0.03;
const USERS: u64 = 4;
const POLICIES: u64 = 2;
const ROOT: (&str, &str) = ("rootuser", "root-secret-123");

fn document(n: u64) -> String {
    format!(
        r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::b{n}/*"]}}]}}"#
    )
}

/// One IAM change of the series.
#[derive(Debug, Clone)]
enum Change {
    AddUser(String),
    RemoveUser(String),
    Status(String, Status),
    SetPolicy(String, u64),
    Attach(String, String),
    JoinGroup(String),
}

fn apply(change: &Change, state: &mut IamState) -> Result<(), IamError> {
    match change {
        Change::AddUser(u) => state.add_user(u, &format!("{u}-secret-key")),
        Change::RemoveUser(u) => state.remove_user(u),
        Change::Status(u, s) => state.set_user_status(u, *s),
        Change::SetPolicy(p, n) => state.set_policy(p, &document(*n)),
        Change::Attach(p, u) => state.attach(Target::User(u), &[p]),
        Change::JoinGroup(u) => {
            let group = format!("{}staff", &u[..2]);
            state.add_group_members(&group, &[u])
        }
    }
}

/// The part of `state` named by `writer`'s prefix.
fn part(state: &IamState, writer: &str) -> IamState {
    let mine = |name: &String| name.starts_with(writer);
    IamState {
        users: state.users.iter().filter(|(k, _)| mine(k)).map(|(k, v)| (k.clone(), v.clone())).collect(),
        groups: state.groups.iter().filter(|(k, _)| mine(k)).map(|(k, v)| (k.clone(), v.clone())).collect(),
        policies: state
            .policies
            .iter()
            .filter(|(k, _)| mine(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        ..state.clone()
    }
}

/// A change of `writer`'s names that applies to `state`, chosen by `rng`.
fn choose(rng: &mut SimRng, state: &IamState, writer: &str) -> Change {
    loop {
        let user = format!("{writer}user{}", rng.below(USERS));
        let policy = format!("{writer}policy{}", rng.below(POLICIES));
        let change = match rng.below(6) {
            0 => Change::AddUser(user),
            1 => Change::RemoveUser(user),
            2 => Change::Status(user, if rng.chance(0.5) { Status::Enabled } else { Status::Disabled }),
            3 => Change::SetPolicy(policy, rng.below(1000)),
            4 => Change::Attach(policy, user),
            _ => Change::JoinGroup(user),
        };
        if apply(&change, &mut state.clone()).is_ok() {
            return change;
        }
    }
}

/// A change as made: events before it began and after it returned, and the states around it.
struct Made {
    change: Change,
    start: u64,
    end: u64,
    before: IamState,
    after: IamState,
}

async fn load(layer: &ObjectLayer) -> Result<IamState, String> {
    let iam = Iam::new(ROOT.0, ROOT.1);
    iam.load(layer).await.map_err(|e| format!("the IAM state does not load: {e}"))?;
    Ok(iam.directory().state().clone())
}

/// A short account of a state for failure messages.
fn show(state: &IamState) -> String {
    format!("{state:?}").chars().filter(|c| !c.is_whitespace()).take(300).collect()
}

/// What `writer`'s part may be after a cut right after `event`, and its change in flight then.
fn allowed_at(history: &[Made], event: u64) -> (Vec<IamState>, Option<Change>) {
    let mut allowed = vec![IamState::new()];
    let mut in_flight = None;
    for m in history {
        if m.end <= event {
            allowed = vec![m.after.clone()];
        } else if m.start < event {
            allowed = vec![m.before.clone(), m.after.clone()];
            in_flight = Some(m.change.clone());
        }
    }
    (allowed, in_flight)
}

async fn check_cut(
    cut: &PowerCut,
    harsh: Option<u64>,
    histories: &[(&str, Vec<Made>)],
) -> Result<(), String> {
    let fs = cut.boot(harsh);
    let (layer, _drives) = strata_object::sim::layer_on(&fs, DRIVES).await?;
    let found = load(&layer).await?;
    for (writer, history) in histories {
        let (allowed, in_flight) = allowed_at(history, cut.event);
        let mine = part(&found, writer);
        if !allowed.contains(&mine) {
            return Err(format!(
                "writer {writer}: found {}, acknowledged {:?} (in flight: {in_flight:?})",
                show(&mine),
                allowed.iter().map(show).collect::<Vec<_>>()
            ));
        }
    }
    layer.heal_scan(HealScope::default()).await;
    let healed = load(&layer).await?;
    if healed != found {
        return Err(format!("{} before healing, {} after", show(&found), show(&healed)));
    }
    let iam = Iam::new(ROOT.0, ROOT.1);
    iam.load(&layer).await.map_err(|e| e.to_string())?;
    iam.change(&layer, |s| s.add_user("later", "later-secret-key"))
        .await
        .map_err(|e| format!("a change after the cut fails: {e}"))?;
    if !load(&layer).await?.access_key_in_use("later") {
        return Err("the change after the cut did not stick".into());
    }
    Ok(())
}

/// One writer's series: its changes as made.
async fn series(layer: &ObjectLayer, fs: &SimFs, seed: u64, writer: &str) -> Result<Vec<Made>, String> {
    let iam = Iam::new(ROOT.0, ROOT.1);
    let mut rng = SimRng::new(seed ^ 0x1a3 ^ u64::from(writer.as_bytes()[0]) << 40);
    let mut model = IamState::new();
    let mut history = Vec::new();
    for _ in 0..CHANGES {
        let change = choose(&mut rng, &model, writer);
        let start = fs.events();
        let c = change.clone();
        iam.change(layer, move |s| apply(&c, s))
            .await
            .map_err(|e| format!("{change:?} failed on healthy drives: {e}"))?;
        let end = fs.events();
        let before = model.clone();
        apply(&change, &mut model).map_err(|e| format!("the model refuses {change:?}: {e}"))?;
        history.push(Made { change, start, end, before, after: model.clone() });
    }
    Ok(history)
}

async fn run_seed(seed: u64) -> (usize, Vec<String>) {
    let fs = SimFs::new();
    let (layer, _drives) = match strata_object::sim::layer_on(&fs, DRIVES).await {
        Ok(l) => l,
        Err(e) => return (0, vec![format!("seed {seed}: fresh drives: {e}")]),
    };
    if let Err(e) = strata_system::prepare(&layer).await {
        return (0, vec![format!("seed {seed}: system bucket: {e}")]);
    }
    fs.capture_with_probability(CUT_PROBABILITY, seed);
    let (a, b) =
        futures_util::future::join(series(&layer, &fs, seed, "a-"), series(&layer, &fs, seed, "b-")).await;
    let histories = match (a, b) {
        (Ok(a), Ok(b)) => [("a-", a), ("b-", b)],
        (Err(e), _) | (_, Err(e)) => return (0, vec![format!("seed {seed}: {e}")]),
    };
    drop(layer);
    let cuts = fs.take_power_cuts();
    let mut failures = Vec::new();
    for (i, cut) in cuts.iter().enumerate() {
        let harsh = (i % 2 == 1).then_some(seed.wrapping_mul(1000) + i as u64);
        if let Err(why) = check_cut(cut, harsh, &histories).await {
            let changes: Vec<String> = histories
                .iter()
                .flat_map(|(_, h)| h.iter().map(|m| format!("{:?} [{}..{}]", m.change, m.start, m.end)))
                .collect();
            failures.push(format!(
                "seed {seed}, cut after event {} (harsh {harsh:?}): {why}\n  changes: {changes:?}",
                cut.event
            ));
        }
    }
    (cuts.len(), failures)
}

#[test]
fn acknowledged_iam_changes_survive_power_cuts() {
    let seeds: u64 = std::env::var("STRATA_CRASH_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(24);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(2)
        .build()
        .expect("runtime");
    let (mut cuts, mut failures) = (0, Vec::new());
    for seed in 0..seeds {
        let (n, f) = runtime.block_on(run_seed(seed));
        cuts += n;
        failures.extend(f);
    }
    eprintln!("IAM crash simulation: {seeds} series, {cuts} power cuts checked, {} failed", failures.len());
    assert!(
        failures.is_empty(),
        "{} of {cuts} power cuts lost or mangled an acknowledged IAM change:\n{}",
        failures.len(),
        failures.iter().take(5).cloned().collect::<Vec<_>>().join("\n")
    );
    assert!(cuts as u64 >= seeds * 10, "too few cuts taken ({cuts}): the cut probability needs tuning");
}
