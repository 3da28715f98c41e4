//! Drive endpoints from the command line: folders (`/mnt/disk1`) or URLs naming the node that
//! holds the drive (`http://node1:9000/mnt/disk1`), grouped into pools.
//!
//! Each ellipsis argument is one pool; plain arguments listed together form one pool. A pool's
//! endpoints are all folders or all URLs. Expansion is node-major (the first range varies
//! slowest), so the layout's strided sets ([`crate::layout::plan`]) take drives from every node
//! in turn; [`node_spread`] shows how many drives of each set every node holds.

use std::collections::BTreeMap;

use crate::ellipsis;
use crate::layout::Layout;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    #[error(transparent)]
    Ellipsis(#[from] ellipsis::EllipsisError),
    #[error("endpoint {0:?} must be http(s)://host:port/path")]
    BadUrl(String),
    #[error("mixing ellipsis patterns and plain drive arguments is ambiguous: use one style")]
    MixedStyles,
    #[error("pool {0} mixes folders and URLs: give every drive as a URL, or every drive as a folder")]
    MixedKinds(usize),
    #[error("no drives given")]
    NoDrives,
}

/// One drive: on this machine (`node` is `None`), or on the node at `host:port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub node: Option<String>,
    pub path: String,
}

impl Endpoint {
    pub fn parse(arg: &str) -> Result<Self, EndpointError> {
        let Some(rest) = arg.strip_prefix("http://").or_else(|| arg.strip_prefix("https://")) else {
            return Ok(Self { node: None, path: arg.to_owned() });
        };
        let bad = || EndpointError::BadUrl(arg.to_owned());
        let (host, path) = rest.split_once('/').ok_or_else(bad)?;
        let (name, port) = host.rsplit_once(':').ok_or_else(bad)?;
        if name.is_empty() || port.parse::<u16>().is_err() || path.is_empty() {
            return Err(bad());
        }
        Ok(Self { node: Some(host.to_owned()), path: format!("/{path}") })
    }

    /// Whether this drive is served by the node listening at `address` (`host:port`).
    pub fn is_on(&self, address: &str) -> bool {
        self.node.as_deref().is_none_or(|n| n == address)
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.node {
            Some(n) => write!(f, "http://{n}{}", self.path),
            None => write!(f, "{}", self.path),
        }
    }
}

/// Each pool's own argument, as the operator wrote it (a pattern; or the plain arguments of the
/// one pool they form, joined by spaces): how MinIO's admin API names a pool. Call after
/// [`pools`] accepted the arguments.
pub fn pool_args(args: &[String]) -> Vec<String> {
    let mut out: Vec<String> = args.iter().filter(|a| ellipsis::has_ellipsis(a)).cloned().collect();
    if out.is_empty() {
        out.push(args.join(" "));
    }
    out
}

/// The pools the arguments describe.
pub fn pools(args: &[String]) -> Result<Vec<Vec<Endpoint>>, EndpointError> {
    let mut pools = Vec::new();
    let mut plain = Vec::new();
    for arg in args {
        if ellipsis::has_ellipsis(arg) {
            let expanded = ellipsis::expand(arg)?;
            pools.push(expanded.iter().map(|e| Endpoint::parse(e)).collect::<Result<Vec<_>, _>>()?);
        } else {
            ellipsis::check_lookalikes(arg)?;
            plain.push(Endpoint::parse(arg)?);
        }
    }
    if !plain.is_empty() {
        if !pools.is_empty() {
            return Err(EndpointError::MixedStyles);
        }
        pools.push(plain);
    }
    if pools.is_empty() {
        return Err(EndpointError::NoDrives);
    }
    for (i, pool) in pools.iter().enumerate() {
        if pool.iter().any(|e| e.node.is_some()) && pool.iter().any(|e| e.node.is_none()) {
            return Err(EndpointError::MixedKinds(i));
        }
    }
    Ok(pools)
}

/// The nodes of a pool, in the order they first appear (empty for folders).
pub fn nodes(pool: &[Endpoint]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in pool.iter().filter_map(|e| e.node.as_ref()) {
        if !out.contains(n) {
            out.push(n.clone());
        }
    }
    out
}

/// Per set of `layout`, how many of its drives each node holds.
pub fn node_spread(layout: &Layout, pool: &[Endpoint]) -> Vec<BTreeMap<String, usize>> {
    layout
        .sets
        .iter()
        .map(|set| {
            let mut per_node = BTreeMap::new();
            for &i in &set.drive_indexes {
                let node = pool.get(i).and_then(|e| e.node.clone()).unwrap_or_else(|| "local".into());
                *per_node.entry(node).or_insert(0) += 1;
            }
            per_node
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::plan;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn parses_folders_and_urls() {
        assert_eq!(Endpoint::parse("/mnt/d1"), Ok(Endpoint { node: None, path: "/mnt/d1".into() }));
        let e = Endpoint::parse("http://10.0.0.1:9000/mnt/d1").expect("url");
        assert_eq!((e.node.as_deref(), e.path.as_str()), (Some("10.0.0.1:9000"), "/mnt/d1"));
        assert!(e.is_on("10.0.0.1:9000") && !e.is_on("10.0.0.2:9000"));
        assert_eq!(e.to_string(), "http://10.0.0.1:9000/mnt/d1");
        for bad in [
            "http://node1/mnt/d1",
            "http://node1:x/d",
            "http://:9000/d",
            "http://node1:9000",
            "http://n:9000/",
        ] {
            assert!(Endpoint::parse(bad).is_err(), "{bad}");
        }
    }

    /// The shapes: every set spreads evenly over the nodes, so losing a node costs each
    /// set no more drives than its parity.
    #[test]
    fn sets_spread_evenly_over_nodes() {
        let p = pools(&args(&["http://node{1...4}:9000/mnt/disk{1...8}"])).expect("pools");
        assert_eq!(nodes(&p[0]), ["node1:9000", "node2:9000", "node3:9000", "node4:9000"]);
        let layout = plan(p[0].len(), None).expect("plan");
        assert_eq!((layout.sets.len(), layout.set_drive_count, layout.parity_count), (2, 16, 4));
        for set in node_spread(&layout, &p[0]) {
            assert_eq!(set.values().copied().collect::<Vec<_>>(), [4, 4, 4, 4]);
        }
        // 4 nodes × 2 drives as plain URLs listed node by node: one set of 8, two per node.
        let plain: Vec<String> = (1..=4)
            .flat_map(|n| (1..=2).map(move |d| format!("http://127.0.0.1:900{n}/tmp/n{n}/d{d}")))
            .collect();
        let p = pools(&plain).expect("pools");
        assert_eq!(p.len(), 1);
        let layout = plan(p[0].len(), None).expect("plan");
        let spread = node_spread(&layout, &p[0]);
        assert_eq!(spread.len(), 1);
        assert!(spread[0].values().all(|&n| n == 2) && spread[0].len() == 4);
        assert!(spread[0].values().all(|&n| n <= layout.parity_count));
    }

    #[test]
    fn pool_rules() {
        assert_eq!(pools(&args(&["/a{1...4}", "/b{1...4}"])).expect("pools").len(), 2);
        assert_eq!(pools(&args(&["/a{1...4}", "/b"])), Err(EndpointError::MixedStyles));
        assert_eq!(pools(&args(&["/a", "http://n:9000/b"])), Err(EndpointError::MixedKinds(0)));
        assert_eq!(pools(&args(&[])), Err(EndpointError::NoDrives));
        assert!(matches!(pools(&args(&["./data/d{1..4}"])), Err(EndpointError::Ellipsis(_))));
    }
}
