//! `strata import`: taking over another store's drives.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use strata_import::minio::survey::{running_server, survey, Survey};
use strata_import::minio::Deployment;
use strata_types::limits::MINIO_RUNNING_PROBE_AGE;

#[derive(Subcommand)]
pub enum ImportCommand {
    /// Take over the drives of a stopped MinIO deployment (one set of one pool today). With
    /// --dry-run it reports, per bucket, what the import would take over in place, what it
    /// would move from MinIO's metadata, what needs MinIO's KMS key, and what it would leave
    /// alone, and changes nothing.
    Minio(MinioArgs),
}

#[derive(Args)]
pub struct MinioArgs {
    /// MinIO's drives (folders; ellipsis patterns like /mnt/disk{1...4} expand), in any order.
    #[arg(required = true)]
    drives: Vec<String>,
    /// Report what the import would do; change nothing. (The import itself is not in this
    /// build yet: only the dry run is.)
    #[arg(long, required = true)]
    dry_run: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

pub fn main(cmd: ImportCommand) -> Result<()> {
    match cmd {
        ImportCommand::Minio(args) => minio(args),
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
    let deployment = Deployment::open(&drives)?;
    let in_order: Vec<PathBuf> = deployment.drives.iter().map(|d| d.path.clone()).collect();
    if let Some(why) = running_server(&in_order, MINIO_RUNNING_PROBE_AGE, std::time::SystemTime::now()) {
        bail!(
            "{why}; stop it first (or wait {} s if it has just stopped)",
            MINIO_RUNNING_PROBE_AGE.as_secs()
        );
    }
    let report = survey(&deployment)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).context("the report as JSON")?);
    } else {
        print!("{}", render(&report));
    }
    Ok(())
}

fn render(s: &Survey) -> String {
    use std::fmt::Write;
    let size = |b: u64| strata_types::size::format_size(b);
    let mut out = String::new();
    let _ = writeln!(out, "MinIO deployment {}: {} drives, in set order:", s.deployment_id, s.drives.len());
    for d in &s.drives {
        let _ = writeln!(out, "  {}", d.display());
    }
    let _ = writeln!(
        out,
        "\n{:<24} {:>8} {:>18} {:>18} {:>18} {:>8} {:>8}",
        "bucket", "objects", "in place", "inline", "re-encrypt", "deleted", "skipped"
    );
    let tally = |t: &strata_import::minio::survey::Tally| format!("{} ({})", t.versions, size(t.bytes));
    for b in &s.buckets {
        let _ = writeln!(
            out,
            "{:<24} {:>8} {:>18} {:>18} {:>18} {:>8} {:>8}",
            b.name,
            b.objects,
            tally(&b.in_place),
            tally(&b.inline),
            tally(&b.reencrypt),
            b.delete_markers,
            b.skipped.len()
        );
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
         need MinIO's KMS key. Nothing was changed (dry run)."
    );
    out
}
