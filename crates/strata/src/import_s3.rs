//! `strata import s3 --from ENDPOINT DRIVE...`: a live import from any S3 endpoint into a
//! Strata deployment's drives (see `strata_import::s3`). The endpoint stays up and keeps
//! serving; Strata is not running on the drives while the import writes to them. Reruns copy
//! only what is new, so the last run before the switch is short.

use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::Args;
use strata_client::client::Endpoint;
use strata_import::s3::{copy, render_plan, render_report, source::Source, survey};

use crate::import::Bar;

#[derive(Args)]
pub struct S3Args {
    /// The endpoint to read from: http(s)://host:port.
    #[arg(long = "from")]
    from: String,
    /// Its access key (or STRATA_IMPORT_ACCESS_KEY).
    #[arg(long, env = "STRATA_IMPORT_ACCESS_KEY", hide_env_values = true)]
    access_key: String,
    /// Its secret key (or STRATA_IMPORT_SECRET_KEY, which keeps it out of the process list).
    #[arg(long, env = "STRATA_IMPORT_SECRET_KEY", hide_env_values = true)]
    secret_key: String,
    /// The region requests are signed for.
    #[arg(long, default_value = "us-east-1")]
    region: String,
    /// With https: accept any server certificate (signatures are still checked).
    #[arg(long)]
    insecure: bool,
    /// Only this bucket (again for more); every bucket the credentials see by default.
    #[arg(long = "bucket")]
    buckets: Vec<String>,
    /// List what would be imported; touch no drive.
    #[arg(long)]
    dry_run: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Versions copied at a time.
    #[arg(long, default_value_t = strata_types::limits::IMPORT_OBJECTS_IN_FLIGHT)]
    parallel: usize,
    /// Strata's drives, as `strata server` takes them (folders or ellipsis patterns).
    #[arg(required_unless_present = "dry_run")]
    drives: Vec<String>,
}

pub fn main(args: S3Args) -> Result<()> {
    let (tls, host) = match (args.from.strip_prefix("https://"), args.from.strip_prefix("http://")) {
        (Some(h), _) => (true, h),
        (None, Some(h)) => (false, h),
        _ => bail!("--from {}: give the endpoint as http://host:port or https://host:port", args.from),
    };
    let endpoint = Endpoint {
        hosts: vec![host.trim_end_matches('/').to_owned()],
        access_key: args.access_key.clone(),
        secret_key: args.secret_key.clone(),
        region: args.region.clone(),
        tls,
        insecure: args.insecure,
        object_headers: Vec::new(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let source = Source::new(endpoint, args.parallel.max(1))?;
        let plan = survey(&source, &args.buckets).await.with_context(|| format!("reading {}", args.from))?;
        if args.dry_run {
            if args.json {
                println!("{}", serde_json::to_string_pretty(&plan)?);
            } else {
                print!("{}", render_plan(&plan));
            }
            return Ok(());
        }
        let layer = open_layer(&args.drives).await?;
        let kms = crate::kms_from_env(&layer).await?;
        let mut bar = Bar::new(plan.versions(), plan.bytes());
        let report =
            copy(&layer, &source, &plan, kms.as_ref(), args.parallel, &mut |v, b| bar.step(v, b)).await?;
        bar.finish();
        if args.json {
            println!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            print!("{}", render_report(&report));
            println!("\nStart Strata on the drives:\n  strata server {}", args.drives.join(" "));
        }
        if report.skipped() > 0 {
            bail!(
                "{} versions were not imported (listed above); fix what they need and run again",
                report.skipped()
            );
        }
        Ok(())
    })
}

/// Opens the drives as a Strata deployment in this process alone (formatting blank ones, as a
/// first start does).
async fn open_layer(drives: &[String]) -> Result<Arc<strata_object::ObjectLayer>> {
    let user = std::env::var("STRATA_ROOT_USER").unwrap_or_default();
    let password = std::env::var("STRATA_ROOT_PASSWORD").unwrap_or_default();
    crate::drives::open_alone(drives, (&user, &password)).await.context("Strata's drives")
}
