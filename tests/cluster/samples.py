# ruff: noqa: E501  (kubectl prints these lines as wide as they are)
"""Small outputs in kubectl's own formats (written for these tests, not copied from a fixture)."""

OOM_POD = """Name:             api-6f7d8c9b5d-x7k2q
Namespace:        web
Status:           Running
Controlled By:    ReplicaSet/api-6f7d8c9b5d
Containers:
  api:
    Image:          example/api:1.2
    State:          Waiting
      Reason:       CrashLoopBackOff
    Last State:     Terminated
      Reason:       OOMKilled
      Exit Code:    137
    Ready:          False
    Restart Count:  4
    Limits:
      memory:  128Mi
    Environment:
      API_TOKEN:    s3cr3t-value
      LOG_LEVEL:    info
Conditions:
  Type              Status
  Ready             False
Events:
  Type     Reason   Age                From     Message
  ----     ------   ----               ----     -------
  Warning  BackOff  1m (x9 over 5m)    kubelet  Back-off restarting failed container api in pod api-6f7d8c9b5d-x7k2q_web(1)
"""

IMAGE_POD = """Name:             web-7c8d9e0f1a-zzzzz
Namespace:        web
Status:           Pending
Controlled By:    ReplicaSet/web-7c8d9e0f1a
Containers:
  web:
    Image:          example/web:nope
    State:          Waiting
      Reason:       ImagePullBackOff
    Ready:          False
    Restart Count:  0
Events:
  Type     Reason   Age               From     Message
  ----     ------   ----              ----     -------
  Warning  Failed   10s (x3 over 1m)  kubelet  Failed to pull image "example/web:nope": manifest unknown
"""

PENDING_POD = """Name:             batch
Namespace:        jobs
Status:           Pending
Containers:
  main:
    Image:        busybox
Node-Selectors:              disk=ssd
Events:
  Type     Reason            Age   From               Message
  ----     ------            ----  ----               -------
  Warning  FailedScheduling  20s   default-scheduler  0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.
"""

HEALTHY_POD = """Name:             cart-5b6c7d8e9f-qwert
Namespace:        shop
Status:           Running
Controlled By:    ReplicaSet/cart-5b6c7d8e9f
Containers:
  cart:
    Image:          example/cart:3
    State:          Running
    Ready:          True
    Restart Count:  0
Events:                      <none>
"""

PENDING_CLAIM = """Name:          data-pvc
Namespace:     db
StorageClass:  fast-ssd
Status:        Pending
Used By:       postgres-0
Access Modes:
Events:
  Type     Reason              Age                From                         Message
  ----     ------              ----               ----                         -------
  Warning  ProvisioningFailed  5s (x4 over 1m)    persistentvolume-controller  storageclass.storage.k8s.io "fast-ssd" not found
"""

SERVICE_WITHOUT_ENDPOINTS = """Name:              backend
Namespace:         web
Selector:          app=backnd
Type:              ClusterIP
Endpoints:         <none>
"""

FIND_PODS = """web         api-6f7d8c9b5d-x7k2q     0/1     CrashLoopBackOff   4 (1m ago)   6m    10.0.0.5   node-1   <none>   <none>   app=api
web         api-6f7d8c9b5d-m4n8p     1/1     Running            0            6m    10.0.0.6   node-2   <none>   <none>   app=api"""
