//! `strata import`: taking over another store's drives.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use std::sync::Arc;

use strata_import::minio::format::Sets;
use strata_import::minio::iam::{self as minio_iam, Applied, MinioIam};
use strata_import::minio::survey::{running_server, survey, Survey};
use strata_import::minio::takeover::EncryptedVersion;
use strata_import::minio::takeover::{commit, take_over, TakeoverReport};
use strata_import::minio::Deployment;
use strata_import::minio::{compressed, sse};
use strata_types::limits::{IMPORT_PROGRESS_REDRAW as BAR_REDRAW, MINIO_RUNNING_PROBE_AGE};

#[derive(Subcommand)]
pub enum ImportCommand {
    /// Take over the drives of a stopped MinIO deployment in place (one set of one pool today):
    /// shard files are linked, not copied, and MinIO's own files stay until --commit. With
    /// --dry-run it reports, per bucket, what the import would take over in place, what it
    /// would move from MinIO's metadata, what needs MinIO's KMS key, and what it would leave
    /// alone, and changes nothing.
    Minio(MinioArgs),
    /// Copy buckets, with every version, delete marker, tag, lock and setting, from any S3
    /// endpoint that stays up (a MinIO, another Strata, AWS) into Strata's drives, over S3.
    /// Strata must not be running on the drives meanwhile. Each version's bytes are checked
    /// against the endpoint's ETag; a rerun copies only what is new. With --dry-run it lists
    /// what it would copy and touches no drive.
    S3(crate::import_s3::S3Args),
}

#[derive(Args)]
pub struct MinioArgs {
    /// MinIO's drives (folders; ellipsis patterns like /mnt/disk{1...4} expand), in any order.
    #[arg(required = true)]
    drives: Vec<String>,
    /// Report what the import would do; change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Objects imported at a time: each waits for its drives' commits, so several in flight
    /// share the drives' syncs.
    #[arg(long, default_value_t = strata_types::limits::IMPORT_OBJECTS_IN_FLIGHT, value_parser = clap::value_parser!(usize))]
    parallel: usize,
    /// Confirm a finished import: remove MinIO's own files from the drives (its buckets'
    /// folders and .minio.sys). Refused while any version is only on MinIO's side.
    #[arg(long, conflicts_with = "dry_run")]
    commit: bool,
}

pub fn main(cmd: ImportCommand) -> Result<()> {
    match cmd {
        ImportCommand::Minio(args) => minio(args),
        ImportCommand::S3(args) => crate::import_s3::main(args),
    }
}

fn minio(args: MinioArgs) -> Result<()> {
    let mut drives = Vec::new();
    for arg in &args.drives {
        if strata_cluster::ellipsis::has_ellipsis(arg) {
            drives.extend(strata_cluster::ellipsis::expand(arg)?.into_iter().map(PathBuf::from));
        } else {
            drives.push(PathBuf::from(arg));
        }
    }
    if args.commit {
        let done = commit(&drives)?;
        println!(
            "MinIO's files removed from {} drives ({} folders); the drives are Strata's alone now.",
            done.drives, done.folders_removed
        );
        return Ok(());
    }
    let deployment = Deployment::open(&drives)?;
    let in_order: Vec<PathBuf> = deployment.drives.iter().map(|d| d.path.clone()).collect();
    if let Some(why) = running_server(&in_order, MINIO_RUNNING_PROBE_AGE, std::time::SystemTime::now()) {
        bail!(
            "{why}; stop it first (or wait {} s if it has just stopped)",
            MINIO_RUNNING_PROBE_AGE.as_secs()
        );
    }
    let report = survey(&deployment)?;
    let keys = Keys::from_env()?;
    let sets = deployment.sets();
    let iam = minio_iam::read(&sets, &keys.minio())?;
    if args.dry_run {
        if args.json {
            let both = with_fields(serde_json::to_value(&report)?, [("iam", serde_json::to_value(&iam)?)])?;
            println!("{}", serde_json::to_string_pretty(&both).context("the report as JSON")?);
        } else {
            print!("{}", render(&report));
            print!("{}", render_iam(&iam, None, keys.root.is_some()));
        }
        return Ok(());
    }
    let total: u64 = report.buckets.iter().map(|b| b.in_place.bytes + b.inline.bytes).sum();
    let versions: u64 = report
        .buckets
        .iter()
        .map(|b| {
            b.in_place.versions
                + b.inline.versions
                + b.delete_markers
                + b.reencrypt.versions
                + b.decompress.versions
                + b.skipped.len() as u64
        })
        .sum();
    let mut bar = Bar::new(versions, total);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let done =
        runtime.block_on(take_over(&deployment, args.parallel.max(1), &mut |one: &TakeoverReport| {
            bar.step(one.versions(), one.bytes())
        }))?;
    bar.finish();
    // The steps that need Strata's object layer over the imported drives: MinIO's users,
    // groups, policies and service accounts into Strata's IAM state (sealed under the root
    // credentials the server will run with), MinIO's encrypted versions sealed again under
    // Strata's KMS (opened with MinIO's KMS key), and its compressed versions written again as
    // plain bytes.
    let steps = LayerSteps {
        iam: keys.root.as_ref().filter(|_| !iam.is_empty()).map(|root| (&iam, root)),
        encrypted: keys
            .kms
            .as_ref()
            .filter(|_| !done.encrypted.is_empty())
            .map(|k| (done.encrypted.as_slice(), k)),
        compressed: &done.compressed,
    };
    let after = if steps.iam.is_some() || steps.encrypted.is_some() || !steps.compressed.is_empty() {
        runtime.block_on(with_layer(&sets, keys.root.as_ref(), steps))?
    } else {
        LayerDone::default()
    };
    for written in [&after.sealed, &after.decompressed].into_iter().flatten() {
        strata_import::minio::takeover::settle(&in_order, &written.done)?;
    }
    if args.json {
        let all = with_fields(
            serde_json::to_value(&done)?,
            [
                ("iam", serde_json::to_value(&iam)?),
                ("iam_applied", serde_json::to_value(&after.applied)?),
                ("encrypted_sealed_again", serde_json::to_value(&after.sealed)?),
                ("compressed_written_again", serde_json::to_value(&after.decompressed)?),
            ],
        )?;
        println!("{}", serde_json::to_string_pretty(&all).context("the report as JSON")?);
    } else {
        print!("{}", render_iam(&iam, after.applied.as_ref(), keys.root.is_some()));
        print!("{}", render_sealed(&done.encrypted, after.sealed.as_ref()));
        print!("{}", render_decompressed(after.decompressed.as_ref()));
        print!("{}", render_done(&done, &in_order));
    }
    Ok(())
}

/// What became of MinIO's encrypted or compressed versions.
#[derive(Debug, Default, serde::Serialize)]
struct WrittenAgain {
    /// Written again (or found so from an earlier run).
    done: Vec<EncryptedVersion>,
    /// Plain bytes written.
    bytes: u64,
    /// Left on MinIO's side, with the reason.
    left: Vec<String>,
}

/// The steps that need a Strata object layer over the imported drives.
struct LayerSteps<'a> {
    /// MinIO's IAM, stored in Strata's IAM state under these root credentials.
    iam: Option<(&'a MinioIam, &'a (String, String))>,
    /// Encrypted versions, opened with MinIO's KMS key and sealed again under Strata's KMS.
    encrypted: Option<(&'a [EncryptedVersion], &'a strata_crypto::kms::MasterKey)>,
    /// Compressed versions, written again as plain bytes.
    compressed: &'a [EncryptedVersion],
}

#[derive(Default)]
struct LayerDone {
    applied: Option<Applied>,
    sealed: Option<WrittenAgain>,
    decompressed: Option<WrittenAgain>,
}

/// How a version is written again.
enum Again<'a> {
    Seal { kms: &'a Arc<dyn strata_crypto::Kms>, master: &'a strata_crypto::kms::MasterKey },
    Decompress,
}

/// Opens the imported drives as a Strata deployment (this process alone) and runs `steps`.
async fn with_layer(
    sets: &Sets,
    root: Option<&(String, String)>,
    steps: LayerSteps<'_>,
) -> Result<LayerDone> {
    let args: Vec<String> = sets.all().iter().map(|d| d.display().to_string()).collect();
    let root = root.cloned().unwrap_or_default();
    let layer = crate::drives::open_alone(&args, (&root.0, &root.1)).await.context("the imported drives")?;
    let mut done = LayerDone::default();
    if let Some((iam, root)) = steps.iam {
        done.applied = Some(import_iam(&layer, iam, root).await.context("importing MinIO's IAM")?);
    }
    if let Some((encrypted, master)) = steps.encrypted {
        let kms = crate::kms_from_env(&layer)
            .await?
            .context("no KMS for the encrypted versions: set MINIO_KMS_SECRET_KEY (or STRATA_KMS_*)")?;
        done.sealed = Some(write_again(&layer, sets, Again::Seal { kms: &kms, master }, encrypted).await);
    }
    if !steps.compressed.is_empty() {
        done.decompressed = Some(write_again(&layer, sets, Again::Decompress, steps.compressed).await);
    }
    Ok(done)
}

/// Puts MinIO's IAM into Strata's IAM state.
async fn import_iam(
    layer: &strata_object::ObjectLayer,
    iam: &MinioIam,
    root: &(String, String),
) -> Result<Applied> {
    let store = strata_system::iam::Iam::new(&root.0, &root.1);
    store.load(layer).await.context("reading Strata's IAM state")?;
    let now = strata_types::time::now_nanos() / 1_000_000_000;
    let applied = store
        .change(layer, |state| Ok(minio_iam::apply(iam, state, &root.0, now)))
        .await
        .context("storing Strata's IAM state")?;
    Ok(applied)
}

/// A version opened to be written again.
struct Reopened<B> {
    metadata: strata_import::minio::takeover::Metadata,
    etag: String,
    size: u64,
    body: B,
    sse: Option<strata_object::SsePut>,
    /// The ETag to keep (a multipart object's `<md5>-N`, checked by `body` as it is read).
    keep_etag: Option<String>,
    /// A multipart object's plain part sizes: it is written again in the same parts.
    parts: Option<Vec<u64>>,
}

/// Stores each of `versions` again: an encrypted one decrypted with MinIO's KMS key and sealed
/// under Strata's KMS (SSE-S3, as MinIO had it), a compressed one as its plain bytes; each with
/// its own id, time, metadata and lock, in its place among the object's versions. A version
/// already there from an earlier run is counted, not written twice.
async fn write_again(
    layer: &strata_object::ObjectLayer,
    sets: &Sets,
    how: Again<'_>,
    versions: &[EncryptedVersion],
) -> WrittenAgain {
    let mut out = WrittenAgain::default();
    for v in versions {
        let mod_time = u64::try_from(v.mod_time).unwrap_or(0);
        let which = strata_object::VersionRef::Id(v.version_id);
        if let Ok(o) = layer.open_object_version(&v.bucket, &v.key, which, false).await {
            if o.info.mod_time == mod_time {
                out.done.push(v.clone());
                continue;
            }
        }
        let opened = match reopen(&how, sets, v).await {
            Ok(o) => o,
            Err(e) => {
                out.left.push(format!("{}: {e}", v.name()));
                continue;
            }
        };
        let m = opened.metadata;
        let opts = strata_object::PutOptions {
            headers: m.headers,
            user_metadata: m.user_metadata,
            tags: m.tags,
            retention: m.retention,
            legal_hold: m.legal_hold,
            sse: opened.sse,
            ..Default::default()
        };
        let imported = strata_object::Imported {
            version_id: v.version_id,
            mod_time,
            etag: opened.keep_etag,
            replica: false,
        };
        let mut body = opened.body;
        let (bucket, key) = (&v.bucket, &v.key);
        let written = match &opened.parts {
            Some(sizes) => layer.import_parts(bucket, key, imported, sizes, &mut body, opts).await,
            None => layer.import_version(bucket, key, imported, &mut body, opts).await,
        };
        match written {
            Ok(info) if info.etag == opened.etag => {
                out.bytes += opened.size;
                out.done.push(v.clone());
            }
            Ok(info) => {
                // Taken out again, so a later run does not find it there and count it done.
                let which = strata_object::VersionRef::Id(v.version_id);
                let removed = match layer.delete_object_version(&v.bucket, &v.key, which, true).await {
                    Ok(_) => "removed again".to_owned(),
                    Err(e) => format!("not removed ({e}): remove it before --commit"),
                };
                out.left.push(format!(
                    "{}: stored, but its ETag {} is not MinIO's {} ({removed}): left for MinIO",
                    v.name(),
                    info.etag,
                    opened.etag
                ))
            }
            Err(e) => out.left.push(format!("{}: {e}", v.name())),
        }
    }
    out
}

/// Opens `v` on MinIO's drives as `how` writes it again.
async fn reopen(
    how: &Again<'_>,
    sets: &Sets,
    v: &EncryptedVersion,
) -> Result<Reopened<sse::PlainBody>, String> {
    // Reading MinIO's `xl.meta` copies is file I/O: off the runtime's task queue.
    let drives = sets.of(&v.key);
    match how {
        Again::Seal { kms, master } => {
            let opened = tokio::task::block_in_place(|| sse::open_version(drives, Some(master), v))
                .map_err(|e| e.to_string())?;
            // Sealed again as MinIO had it: SSE-S3, or SSE-KMS under the same key name and context.
            let asked = match &opened.kms {
                None => strata_s3::sse::SseRequest::S3,
                Some((key_id, _)) => strata_s3::sse::SseRequest::Kms {
                    key_id: Some(key_id.clone()),
                    context: opened.kms_context_header(),
                    dual: false,
                },
            };
            let (put, _) = strata_s3::sse::seal_new_with(Some(kms), asked, true)
                .await
                .map_err(|e| format!("Strata's KMS: {e:?}"))?;
            // MinIO's ETag is kept where it is not the MD5 of the bytes (a multipart object's
            // `<md5>-N`; an SSE-KMS object's, opaque as on AWS): the bytes were authenticated
            // package by package as they were decrypted. An SSE-S3 PUT's must be their MD5.
            let multipart = opened.etag.contains('-');
            let keep_etag = (multipart || opened.kms.is_some()).then(|| opened.etag.clone());
            Ok(Reopened {
                metadata: opened.metadata,
                etag: opened.etag,
                size: opened.size,
                body: opened.body,
                sse: Some(put),
                keep_etag,
                parts: multipart.then_some(opened.part_sizes),
            })
        }
        Again::Decompress => {
            let opened = tokio::task::block_in_place(|| compressed::open_version(drives, v))
                .map_err(|e| e.to_string())?;
            let multipart = opened.etag.contains('-');
            Ok(Reopened {
                metadata: opened.metadata,
                keep_etag: multipart.then(|| opened.etag.clone()),
                etag: opened.etag,
                size: opened.size,
                body: opened.body,
                sse: None,
                parts: multipart.then_some(opened.part_sizes),
            })
        }
    }
}

impl WrittenAgain {
    /// A headline made of the versions written and their size, then each version left and why.
    fn render(&self, headline: impl Fn(usize, String) -> String) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        let _ = writeln!(out, "{}", headline(self.done.len(), strata_types::size::format_size(self.bytes)));
        for l in &self.left {
            let _ = writeln!(out, "  left for MinIO: {l}");
        }
        out.push('\n');
        out
    }
}

fn render_decompressed(written: Option<&WrittenAgain>) -> String {
    written.map_or_else(String::new, |w| {
        w.render(|n, bytes| {
            format!("Compressed by MinIO: {n} versions written again as plain bytes ({bytes})")
        })
    })
}

fn render_sealed(encrypted: &[EncryptedVersion], sealed: Option<&WrittenAgain>) -> String {
    match (encrypted.is_empty(), sealed) {
        (true, _) => String::new(),
        (false, Some(s)) => s.render(|n, bytes| {
            format!("Encrypted by MinIO: {n} versions sealed again under Strata's KMS ({bytes} decrypted with MinIO's KMS key)")
        }),
        (false, None) => format!(
            "Encrypted by MinIO: {} versions wait for MinIO's KMS key (MINIO_KMS_SECRET_KEY) and stay readable by MinIO\n\n",
            encrypted.len()
        ),
    }
}

/// `report` as a JSON object, with `fields` added.
fn with_fields<const N: usize>(
    mut value: serde_json::Value,
    fields: [(&str, serde_json::Value); N],
) -> Result<serde_json::Value> {
    let object = value.as_object_mut().context("a report is a JSON object")?;
    for (name, v) in fields {
        object.insert(name.to_owned(), v);
    }
    Ok(value)
}

/// The keys the import may need, from the environment (MinIO's names are read as Strata's).
struct Keys {
    kms: Option<strata_crypto::kms::MasterKey>,
    root: Option<(String, String)>,
}

impl Keys {
    fn from_env() -> Result<Self> {
        let kms = match std::env::var("STRATA_KMS_SECRET_KEY") {
            Ok(v) => Some(
                strata_crypto::kms::MasterKey::parse(&v)
                    .map_err(|e| anyhow::anyhow!("MINIO_KMS_SECRET_KEY (or STRATA_KMS_SECRET_KEY): {e}"))?,
            ),
            Err(_) => None,
        };
        let user = crate::secret_from_env("STRATA_ROOT_USER")?;
        let password = crate::secret_from_env("STRATA_ROOT_PASSWORD")?;
        Ok(Self { kms, root: user.zip(password) })
    }

    fn minio(&self) -> minio_iam::Keys<'_> {
        minio_iam::Keys {
            kms: self.kms.as_ref(),
            root: self.root.as_ref().map(|(u, p)| (u.as_str(), p.as_str())),
        }
    }
}

fn render_iam(iam: &MinioIam, applied: Option<&Applied>, have_root: bool) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    if iam.is_empty() && iam.temporary == 0 {
        return out;
    }
    let _ = writeln!(
        out,
        "MinIO's IAM: {} users, {} groups, {} policies, {} service accounts ({} temporary credentials left to expire)",
        iam.users.len(),
        iam.groups.len(),
        iam.policies.len(),
        iam.service_accounts.len(),
        iam.temporary
    );
    for u in &iam.unread {
        let _ = writeln!(out, "  not read: {u}");
    }
    match applied {
        Some(a) => {
            let _ = writeln!(
                out,
                "  imported: {} users, {} groups, {} policies, {} service accounts; already there: {}",
                a.users, a.groups, a.policies, a.service_accounts, a.already
            );
            for r in &a.refused {
                let _ = writeln!(out, "  not imported: {r}");
            }
        }
        None if !have_root && !iam.is_empty() => {
            let _ = writeln!(
                out,
                "  not imported: Strata seals its IAM state under its root credentials; set MINIO_ROOT_USER and \
                 MINIO_ROOT_PASSWORD (or STRATA_ROOT_*) to the ones Strata will run with, and run the import again"
            );
        }
        None => {}
    }
    out.push('\n');
    out
}

/// Progress on stderr: versions and bytes done, rate and time left; redrawn at most twice a
/// second.
pub(crate) struct Bar {
    versions: u64,
    bytes: u64,
    done_versions: u64,
    done_bytes: u64,
    started: std::time::Instant,
    drawn: Option<std::time::Instant>,
}

impl Bar {
    pub(crate) fn new(versions: u64, bytes: u64) -> Self {
        Self {
            versions,
            bytes,
            done_versions: 0,
            done_bytes: 0,
            started: std::time::Instant::now(),
            drawn: None,
        }
    }

    pub(crate) fn step(&mut self, versions: u64, bytes: u64) {
        self.done_versions += versions;
        self.done_bytes += bytes;
        let now = std::time::Instant::now();
        if self.drawn.is_some_and(|d| now.duration_since(d) < BAR_REDRAW) {
            return;
        }
        self.drawn = Some(now);
        self.draw();
    }

    fn draw(&self) {
        let secs = self.started.elapsed().as_secs_f64().max(f64::MIN_POSITIVE);
        let share = if self.versions == 0 { 1.0 } else { self.done_versions as f64 / self.versions as f64 };
        let left = if share > 0.0 { secs / share - secs } else { 0.0 };
        eprint!(
            "\r{:>3.0} %  {}/{} versions  {} of {}  {:.0} versions/s  about {:.0} s left   ",
            share * 100.0,
            self.done_versions,
            self.versions,
            strata_types::size::format_size(self.done_bytes),
            strata_types::size::format_size(self.bytes),
            self.done_versions as f64 / secs,
            left
        );
    }

    pub(crate) fn finish(&self) {
        self.draw();
        eprintln!();
    }
}

fn render_done(d: &TakeoverReport, drives: &[PathBuf]) -> String {
    use std::fmt::Write;
    let size = strata_types::size::format_size;
    let mut out = String::new();
    let _ = writeln!(out, "Imported {} buckets: {}", d.buckets.len(), d.buckets.join(", "));
    let _ = writeln!(
        out,
        "  in place: {} versions ({}), linked; inline: {} versions ({}); delete markers: {}",
        d.in_place.versions,
        size(d.in_place.bytes),
        d.inline.versions,
        size(d.inline.bytes),
        d.delete_markers
    );
    let _ = writeln!(
        out,
        "  bytes copied: {}; already imported by an earlier run: {}",
        size(d.bytes_copied),
        d.already_imported
    );
    for s in &d.skipped {
        let _ =
            writeln!(out, "  skipped {} ({}): {}", s.key, s.version_id.as_deref().unwrap_or("null"), s.why);
    }
    for u in &d.unreadable {
        let _ = writeln!(out, "  unreadable (imported from the other drives; healing refills it): {u}");
    }
    for r in &d.settings_refused {
        let _ = writeln!(out, "  setting not imported: {r}");
    }
    let list: Vec<String> = drives.iter().map(|d| d.display().to_string()).collect();
    let _ = writeln!(out, "\nStart Strata on the drives, in this order:\n  strata server {}", list.join(" "));
    let _ = writeln!(
        out,
        "MinIO's own files are still on the drives (MinIO can still read them); once Strata serves \
         them as it should, remove them with:\n  strata import minio --commit {}",
        list.join(" ")
    );
    out
}

fn render(s: &Survey) -> String {
    use std::fmt::Write;
    let size = |b: u64| strata_types::size::format_size(b);
    let mut out = String::new();
    let _ = writeln!(out, "MinIO deployment {}: {} drives, in set order:", s.deployment_id, s.drives.len());
    for d in &s.drives {
        let blank = if s.replacements.contains(d) {
            "   (blank: replaces a lost drive; healing fills it)"
        } else {
            ""
        };
        let _ = writeln!(out, "  {}{blank}", d.display());
    }
    let row = |cells: [&str; 8]| {
        let [a, b, c, d, e, f, g, h] = cells;
        format!("{a:<24} {b:>8} {c:>18} {d:>18} {e:>18} {f:>18} {g:>8} {h:>8}\n")
    };
    out.push('\n');
    out.push_str(&row([
        "bucket",
        "objects",
        "in place",
        "inline",
        "re-encrypt",
        "decompress",
        "deleted",
        "skipped",
    ]));
    let tally = |t: &strata_import::minio::survey::Tally| format!("{} ({})", t.versions, size(t.bytes));
    for b in &s.buckets {
        out.push_str(&row([
            &b.name,
            &b.objects.to_string(),
            &tally(&b.in_place),
            &tally(&b.inline),
            &tally(&b.reencrypt),
            &tally(&b.decompress),
            &b.delete_markers.to_string(),
            &b.skipped.len().to_string(),
        ]));
    }
    for b in &s.buckets {
        if !b.settings.is_empty() {
            let _ = writeln!(out, "{}: {}", b.name, b.settings.join(", "));
        }
    }
    for b in &s.buckets {
        for k in &b.skipped {
            let _ = writeln!(
                out,
                "skipped {}/{} ({}): {}",
                b.name,
                k.key,
                k.version_id.as_deref().unwrap_or("null"),
                k.why
            );
        }
    }
    for u in &s.unreadable {
        let _ = writeln!(out, "unreadable: {u}");
    }
    let _ = writeln!(
        out,
        "\nIn place: shard files are linked, not copied. Re-encrypt: objects MinIO encrypted, which \
         need MinIO's KMS key. Decompress: objects MinIO compressed, written again as plain bytes. \
         Nothing was changed (dry run)."
    );
    out
}
