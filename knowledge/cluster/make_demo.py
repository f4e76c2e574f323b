# ruff: noqa: E501  (kubectl prints its tables and describe lines as wide as they are; the demo keeps them so)
"""Writes demo.json, the recorded demo cluster (synthetic): python knowledge/cluster/make_demo.py."""

import json
from pathlib import Path

CHECKOUT = "checkout-7d9f8b6c5d-x2k4p"
CATALOG = "catalog-5c6b7d8f9-q8w2z"
describe_checkout = f"""Name:             {CHECKOUT}
Namespace:        shop
Priority:         0
Service Account:  default
Node:             worker-2/10.0.0.12
Start Time:       Mon, 30 Nov 2026 06:02:11 +0000
Labels:           app=checkout
                  pod-template-hash=7d9f8b6c5d
Annotations:      <none>
Status:           Running
IP:               10.244.2.17
Controlled By:    ReplicaSet/checkout-7d9f8b6c5d
Containers:
  checkout:
    Container ID:   containerd://5b1e0c7d9a
    Image:          registry.example.com/shop/checkout:2.14.0
    Image ID:       registry.example.com/shop/checkout@sha256:9f2c
    Port:           8080/TCP
    Host Port:      0/TCP
    State:          Waiting
      Reason:       CrashLoopBackOff
    Last State:     Terminated
      Reason:       OOMKilled
      Exit Code:    137
      Started:      Mon, 30 Nov 2026 09:41:02 +0000
      Finished:     Mon, 30 Nov 2026 09:58:47 +0000
    Ready:          False
    Restart Count:  7
    Limits:
      cpu:     1
      memory:  256Mi
    Requests:
      cpu:        250m
      memory:     256Mi
    Liveness:     http-get http://:8080/healthz delay=20s timeout=1s period=10s #success=1 #failure=3
    Environment:
      JAVA_TOOL_OPTIONS:  -Xmx384m
      DB_PASSWORD:        <set to the key 'password' in secret 'checkout-db'>
    Mounts:
      /var/run/secrets/kubernetes.io/serviceaccount from kube-api-access-8kq2t (ro)
Conditions:
  Type              Status
  Initialized       True
  Ready             False
  ContainersReady   False
  PodScheduled      True
QoS Class:                   Guaranteed
Node-Selectors:              <none>
Tolerations:                 node.kubernetes.io/not-ready:NoExecute op=Exists for 300s
Events:
  Type     Reason   Age                  From     Message
  ----     ------   ----                 ----     -------
  Normal   Pulled   12m (x8 over 3h56m)  kubelet  Container image "registry.example.com/shop/checkout:2.14.0" already present on machine
  Normal   Created  12m (x8 over 3h56m)  kubelet  Created container checkout
  Normal   Started  12m (x8 over 3h56m)  kubelet  Started container checkout
  Warning  BackOff  2m (x31 over 3h40m)  kubelet  Back-off restarting failed container checkout in pod {CHECKOUT}_shop(6a0f1c2e)
"""
describe_catalog = f"""Name:             {CATALOG}
Namespace:        shop
Priority:         0
Service Account:  default
Node:             worker-1/10.0.0.11
Start Time:       Sun, 29 Nov 2026 18:20:40 +0000
Labels:           app=catalog
                  pod-template-hash=5c6b7d8f9
Annotations:      <none>
Status:           Running
IP:               10.244.1.9
Controlled By:    ReplicaSet/catalog-5c6b7d8f9
Containers:
  catalog:
    Container ID:   containerd://a7c3e1f0b2
    Image:          registry.example.com/shop/catalog:1.9.3
    Image ID:       registry.example.com/shop/catalog@sha256:41ab
    Port:           8080/TCP
    Host Port:      0/TCP
    State:          Running
      Started:      Sun, 29 Nov 2026 18:20:44 +0000
    Ready:          True
    Restart Count:  0
    Limits:
      memory:  512Mi
    Requests:
      cpu:        100m
      memory:     512Mi
    Environment:  <none>
    Mounts:
      /var/run/secrets/kubernetes.io/serviceaccount from kube-api-access-2mv9d (ro)
Conditions:
  Type              Status
  Initialized       True
  Ready             True
  ContainersReady   True
  PodScheduled      True
QoS Class:                   Burstable
Node-Selectors:              <none>
Tolerations:                 node.kubernetes.io/not-ready:NoExecute op=Exists for 300s
Events:                      <none>
"""
checkout_logs = "\n".join(
    [
        "2026-11-30T09:41:05Z INFO  Starting CheckoutApplication v2.14.0 with PID 1",
        "2026-11-30T09:41:09Z INFO  Tomcat started on port 8080",
        "2026-11-30T09:41:10Z INFO  Warming price-rule cache: loading all rules into memory",
        "2026-11-30T09:52:31Z INFO  price-rule cache holds 1800000 entries (est. 231 MB)",
        "2026-11-30T09:58:40Z INFO  price-rule cache holds 2100000 entries (est. 268 MB)",
    ]
)
catalog_logs = "\n".join([f"2026-11-30T10:0{i}:00Z INFO  GET /api/products 200 {12 + i} ms" for i in range(6)])
pods_table = (
    "NAME                          READY   STATUS             RESTARTS      AGE   IP            NODE       NOMINATED NODE   READINESS GATES   LABELS\n"
    f"{CATALOG}       1/1     Running            0             15h   10.244.1.9    worker-1   <none>           <none>            app=catalog,pod-template-hash=5c6b7d8f9\n"
    f"{CHECKOUT}     0/1     CrashLoopBackOff   7 (2m ago)    4h    10.244.2.17   worker-2   <none>           <none>            app=checkout,pod-template-hash=7d9f8b6c5d"
)


def find_row(pod, status, restarts, age, ip, node, labels):
    return f"shop        {pod}     {'1/1' if status == 'Running' else '0/1'}     {status}   {restarts}   {age}   {ip}   {node}   <none>   <none>   {labels}"


tools = [
    {
        "tool": "kubectl_find_resource",
        "params": {"kind": "pod", "keyword": "checkout"},
        "status": "success",
        "error": None,
        "output": find_row(
            CHECKOUT,
            "CrashLoopBackOff",
            "7 (2m ago)",
            "4h",
            "10.244.2.17",
            "worker-2",
            "app=checkout,pod-template-hash=7d9f8b6c5d",
        ),
    },
    {
        "tool": "kubectl_find_resource",
        "params": {"kind": "pod", "keyword": "catalog"},
        "status": "success",
        "error": None,
        "output": find_row(
            CATALOG, "Running", "0", "15h", "10.244.1.9", "worker-1", "app=catalog,pod-template-hash=5c6b7d8f9"
        ),
    },
    {
        "tool": "kubectl_describe",
        "params": {"kind": "pod", "name": CHECKOUT, "namespace": "shop"},
        "status": "success",
        "error": None,
        "output": describe_checkout,
    },
    {
        "tool": "kubectl_describe",
        "params": {"kind": "pod", "name": CATALOG, "namespace": "shop"},
        "status": "success",
        "error": None,
        "output": describe_catalog,
    },
    {
        "tool": "fetch_pod_logs",
        "params": {"pod_name": CHECKOUT, "namespace": "shop"},
        "status": "success",
        "error": None,
        "output": checkout_logs,
    },
    {
        "tool": "kubectl_previous_logs",
        "params": {"pod_name": CHECKOUT, "namespace": "shop"},
        "status": "success",
        "error": None,
        "output": checkout_logs,
    },
    {
        "tool": "fetch_pod_logs",
        "params": {"pod_name": CATALOG, "namespace": "shop"},
        "status": "success",
        "error": None,
        "output": catalog_logs,
    },
    {
        "tool": "kubectl_get_by_kind_in_namespace",
        "params": {"kind": "pod", "namespace": "shop"},
        "status": "success",
        "error": None,
        "output": pods_table,
    },
]


def describe_deployment(name: str, image: str, available: int, reason: str) -> str:
    unavailable = 1 - available
    return f"""Name:                   {name}
Namespace:              shop
CreationTimestamp:      Sun, 29 Nov 2026 18:20:38 +0000
Labels:                 app={name}
Selector:               app={name}
Replicas:               1 desired | 1 updated | 1 total | {available} available | {unavailable} unavailable
StrategyType:           RollingUpdate
Pod Template:
  Labels:  app={name}
  Containers:
   {name}:
    Image:      {image}
Conditions:
  Type           Status  Reason
  ----           ------  ------
  Available      {"True" if available else "False"}    {reason}
  Progressing    True    NewReplicaSetAvailable
Events:          <none>
"""


def find_deployment(name: str, available: int) -> str:
    return f"shop        {name}   {available}/1     1            {available}           15h   {name}   registry.example.com/shop/{name}   app={name}"


tools += [
    {
        "tool": "kubectl_find_resource",
        "params": {"kind": "deployment", "keyword": "checkout"},
        "status": "success",
        "error": None,
        "output": find_deployment("checkout", 0),
    },
    {
        "tool": "kubectl_find_resource",
        "params": {"kind": "deployment", "keyword": "catalog"},
        "status": "success",
        "error": None,
        "output": find_deployment("catalog", 1),
    },
    {
        "tool": "kubectl_describe",
        "params": {"kind": "deployment", "name": "checkout", "namespace": "shop"},
        "status": "success",
        "error": None,
        "output": describe_deployment(
            "checkout", "registry.example.com/shop/checkout:2.14.0", 0, "MinimumReplicasUnavailable"
        ),
    },
    {
        "tool": "kubectl_describe",
        "params": {"kind": "deployment", "name": "catalog", "namespace": "shop"},
        "status": "success",
        "error": None,
        "output": describe_deployment(
            "catalog", "registry.example.com/shop/catalog:1.9.3", 1, "MinimumReplicasAvailable"
        ),
    },
    {
        "tool": "kubectl_lineage_children",
        "params": {"kind": "deployment", "name": "checkout", "namespace": "shop"},
        "status": "success",
        "error": None,
        "output": f"NAME                                READY   STATUS\nDeployment/checkout                 0/1\n└── ReplicaSet/checkout-7d9f8b6c5d   0/1\n    └── Pod/{CHECKOUT}   0/1   CrashLoopBackOff",
    },
    {
        "tool": "kubectl_lineage_children",
        "params": {"kind": "deployment", "name": "catalog", "namespace": "shop"},
        "status": "success",
        "error": None,
        "output": f"NAME                               READY   STATUS\nDeployment/catalog                 1/1\n└── ReplicaSet/catalog-5c6b7d8f9   1/1\n    └── Pod/{CATALOG}   1/1   Running",
    },
]
doc = {
    "about": "A recorded demo cluster written by this project (synthetic, for `make run` and the README): namespace shop, "
    "deployment checkout (its pod OOMKilled at a 256Mi memory limit, CrashLoopBackOff) and deployment catalog (healthy). "
    "The calls are in HolmesGPT's recorded form (tool, params, output), answered by cluster/recorded.py.",
    "tools": tools,
}
json.dump(doc, open(Path(__file__).with_name("demo.json"), "w"), indent=1)
