"""The Helm chart (deploy/helm/strata) and the plain manifests made from it: rendered for several
value sets, linted, every object validated against the Kubernetes API schemas, the endpoint list,
PDBs and probes checked, layouts that cannot keep a write quorum refused. No cluster runs here."""

import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from conftest import ROOT

CHART = ROOT / "deploy" / "helm" / "strata"
MANIFESTS = ROOT / "deploy" / "kubernetes" / "strata.yaml"
KUBERNETES_VERSION = "1.33.0"


@pytest.fixture(scope="module")
def helm():
    out = subprocess.run([str(ROOT / "scripts" / "install-helm.sh")], capture_output=True, text=True, timeout=3600)
    assert out.returncode == 0, f"scripts/install-helm.sh failed:\n{out.stderr[-4000:]}"
    return out.stdout.strip().splitlines()[-1]


def render(helm, values=(), namespace="storage", check=True):
    args = [helm, "template", "strata", str(CHART), "--namespace", namespace]
    for v in values:
        args += ["--set", v]
    out = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if check:
        assert out.returncode == 0, out.stderr
        return [d for d in yaml.safe_load_all(out.stdout) if d]
    return out


def by_kind(objects, kind):
    return [o for o in objects if o["kind"] == kind]


def env_of(statefulset):
    (container,) = statefulset["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e for e in container["env"]}


VALUE_SETS = {
    "default": [],
    "one-server": ["pools[0].servers=1", "pools[0].drivesPerServer=1", "pools[0].size=10Gi"],
    "two-pools": ["pools[0].servers=4", "pools[0].drivesPerServer=4", "pools[0].size=100Gi",
                  "pools[1].servers=8", "pools[1].drivesPerServer=2", "pools[1].size=200Gi"],
    "tls-secret": ["tls.enabled=true", "tls.existingSecret=strata-certs", "auth.existingSecret=root"],
    "cert-manager": ["tls.enabled=true", "tls.certManager.enabled=true", "tls.certManager.issuerRef.name=ca",
                     "metrics.serviceMonitor.enabled=true", "kms.secretKey.existingSecret=strata-kms",
                     "storageClass.standard=EC:6"],
    "vault": ["kms.vault.endpoint=https://vault.vault.svc:8200", "kms.vault.keyName=strata",
              "kms.vault.tokenSecret=vault-token", "auth.rootPassword=a-long-enough-secret"],
}


@pytest.mark.parametrize("name", VALUE_SETS)
def test_every_rendered_object_validates_against_the_kubernetes_schemas(helm, name):
    values = VALUE_SETS[name]
    lint = subprocess.run([helm, "lint", "--strict", str(CHART), *sum((["--set", v] for v in values), [])],
                          capture_output=True, text=True, timeout=120)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    objects = render(helm, values)
    kinds = {o["kind"] for o in objects}
    assert {"StatefulSet", "Service"} <= kinds, kinds
    for o in objects:
        if o["apiVersion"] in ("monitoring.coreos.com/v1", "cert-manager.io/v1"):
            continue  # custom resources: checked below against what their operators require
        kubernetes_validate.validate(o, KUBERNETES_VERSION, strict=True)
    for s in by_kind(objects, "StatefulSet"):
        spec = s["spec"]["template"]["spec"]
        (c,) = spec["containers"]
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert c["securityContext"]["readOnlyRootFilesystem"] is True
        assert c["livenessProbe"]["httpGet"]["path"] == "/minio/health/live"
        assert c["readinessProbe"]["httpGet"]["path"] == "/minio/health/ready"
        assert c["startupProbe"]["httpGet"]["path"] == "/minio/health/live"
        mounts = [m["mountPath"] for m in c["volumeMounts"] if m["name"].startswith("data")]
        claims = [t["metadata"]["name"] for t in s["spec"]["volumeClaimTemplates"]]
        assert mounts == [f"/data{i}" for i in range(len(claims))] and claims
        assert spec["terminationGracePeriodSeconds"] > 60
        assert "resources" in c and c["resources"]["requests"]
        assert env_of(s)["STRATA_ROOT_PASSWORD"]["valueFrom"]["secretKeyRef"]["key"] == "rootPassword"


def test_the_endpoint_list_names_every_server_and_drive_of_every_pool(helm):
    objects = render(helm, VALUE_SETS["two-pools"])
    sets = by_kind(objects, "StatefulSet")
    assert [s["metadata"]["name"] for s in sets] == ["strata", "strata-pool1"]
    volumes = {env_of(s)["STRATA_VOLUMES"]["value"] for s in sets}
    assert volumes == {
        "http://strata-{0...3}.strata-hl.storage.svc.cluster.local:9000/data{0...3} "
        "http://strata-pool1-{0...7}.strata-hl.storage.svc.cluster.local:9000/data{0...1}"}
    (headless,) = [s for s in by_kind(objects, "Service") if s["spec"].get("clusterIP") == "None"]
    assert headless["metadata"]["name"] == "strata-hl" and headless["spec"]["publishNotReadyAddresses"]
    assert all(s["spec"]["serviceName"] == "strata-hl" for s in sets)
    assert [s["spec"]["replicas"] for s in sets] == [4, 8]
    # The headless service selects every pool's pods.
    selector = headless["spec"]["selector"]
    for s in sets:
        labels = s["spec"]["template"]["metadata"]["labels"]
        assert selector.items() <= labels.items()


@pytest.mark.parametrize("servers,drives,parity,down", [
    (4, 4, "", 1),      # 16 drives, one set of 16 at EC:4: 4 drives per server per set
    (8, 2, "", 2),      # 16 drives: 2 per server per set
    (16, 1, "", 4),
    (3, 1, "", 1),      # 3 drives, EC:1
    (4, 4, "EC:2", 0),  # refused: one server holds 4 of a set that may lose 2
    (2, 2, "", 0),      # refused: a set of 4 at EC:2 needs 3 drives; a server holds 2
])
def test_the_disruption_budget_keeps_the_write_quorum(helm, servers, drives, parity, down):
    values = [f"pools[0].servers={servers}", f"pools[0].drivesPerServer={drives}", "pools[0].size=1Gi"]
    if parity:
        values.append(f"storageClass.standard={parity}")
    if down == 0:
        out = render(helm, values, check=False)
        assert out.returncode != 0
        assert "cannot keep the write quorum with one server down" in out.stderr, out.stderr
        return
    (pdb,) = by_kind(render(helm, values), "PodDisruptionBudget")
    assert pdb["spec"]["maxUnavailable"] == down


@pytest.mark.parametrize("values,message", [
    (["pools=null"], "at least one pool"),
    (["pools[0].servers=1", "pools[0].drivesPerServer=17", "pools[0].size=1Gi"], "no erasure set size"),
    (["storageClass.standard=EC:9"], "more than half"),
    (["storageClass.standard=RS:2"], "EC:N expected"),
    (["tls.enabled=true"], "tls.existingSecret"),
    (["auth.rootPassword=short"], "at least 8 characters"),
    (["kms.vault.endpoint=https://vault:8200"], "kms.vault.keyName"),
])
def test_values_that_cannot_work_are_refused_with_a_message(helm, values, message):
    out = render(helm, values, check=False)
    assert out.returncode != 0 and message in out.stderr, out.stderr


def test_tls_switches_endpoints_and_probes_to_https(helm):
    objects = render(helm, VALUE_SETS["cert-manager"])
    (s,) = by_kind(objects, "StatefulSet")
    assert env_of(s)["STRATA_VOLUMES"]["value"].startswith("https://strata-{0...3}.strata-hl.storage.svc")
    assert env_of(s)["STRATA_CERTS_DIR"]["value"] == "/etc/strata/certs"
    (c,) = s["spec"]["template"]["spec"]["containers"]
    assert c["livenessProbe"]["httpGet"]["scheme"] == "HTTPS"
    (certs,) = [v for v in s["spec"]["template"]["spec"]["volumes"] if v["name"] == "certs"]
    (cert,) = by_kind(objects, "Certificate")
    assert certs["secret"]["secretName"] == cert["spec"]["secretName"]
    assert {i["path"] for i in certs["secret"]["items"]} == {"public.crt", "private.key", "CAs/ca.crt"}
    assert cert["spec"]["issuerRef"]["name"] == "ca"
    assert "*.strata-hl.storage.svc.cluster.local" in cert["spec"]["dnsNames"]
    (monitor,) = by_kind(objects, "ServiceMonitor")
    services = [x for x in by_kind(objects, "Service")
                if monitor["spec"]["selector"]["matchLabels"].items() <= x["metadata"]["labels"].items()]
    assert len(services) == 1 and services[0]["spec"]["ports"][0]["name"] == monitor["spec"]["endpoints"][0]["port"]
    assert {e["path"] for e in monitor["spec"]["endpoints"]} == {"/minio/v2/metrics/node", "/minio/v2/metrics/cluster"}
    assert env_of(s)["STRATA_KMS_SECRET_KEY"]["valueFrom"]["secretKeyRef"]["name"] == "strata-kms"
    assert env_of(s)["STRATA_PROMETHEUS_AUTH_TYPE"]["value"] == "public"


def test_the_plain_manifests_are_the_charts_current_rendering(helm):
    out = subprocess.run([str(ROOT / "scripts" / "render-manifests.sh")], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert MANIFESTS.read_text() == out.stdout, \
        "deploy/kubernetes/strata.yaml is stale: scripts/render-manifests.sh > deploy/kubernetes/strata.yaml"
    objects = [d for d in yaml.safe_load_all(out.stdout) if d]
    assert not by_kind(objects, "Secret"), "the plain manifests must not carry a generated password"
    for o in objects:
        kubernetes_validate.validate(o, KUBERNETES_VERSION, strict=True)
