"""The ``recsys`` section: embedding tables, dense MLPs, batch, tiers and parameter server.

Shape::

    "recsys": {"preset": "dlrm-mlperf-v1",          # or explicit "tables"
               "tables": [{"name": "C1", "rows": 39884406, "dim": 128, "dtype": "fp32",
                           "lookups_per_sample": 1, "zipf_alpha": 1.05,
                           "hash_overhead_bytes_per_row": 0}, ...],
               "bottom_mlp": [13, 512, 256, 128],   # widths, input first
               "top_mlp": [1024, 1024, 512, 256, 1],  # widths after the interaction
               "interaction": "dot",                # or "dcn"
               "batch_size": 65536,                 # global samples per step
               "zipf_alpha": 1.0,                   # default for tables without their own
               "tiers": {"hbm": {}, "ddr": {"capacity_bytes": 1e12}, "nvme": {}},
               "ps": {"servers": 4, "replication": 2},
               "embedding_optimizer": "sgd",        # or adagrad, rowwise_adagrad
               "multi_hot_distribution": "zipf",    # or uniform (MLPerf's synthetic multi-hot)
               "comm_dtype": "fp32", "dense_step_s": null,
               "sample_lookups": 100000, "seed": 0}

Tier figures are per device: per GPU for ``hbm``, per node for the others. Every bad
value raises :class:`ScenarioError` naming its dotted field (``recsys.tables.3.rows``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, replace

from ..errors import ScenarioError
from ..fields import choice_field as _choice, int_field as _int, num_field as _num

DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "int8": 1}
TIER_ORDER = ("hbm", "ddr", "cxl", "pmem", "nvme")       # hottest rows first
INTERACTIONS = ("dot", "dcn")
MULTI_HOT_DISTRIBUTIONS = ("zipf", "uniform")     # see recsys.step.distinct_rows
# Optimizer state stored with each embedding row, bytes per row for a dim-wide row:
# SGD none; Adagrad one fp32 accumulator per element; row-wise Adagrad one per row
# (FBGEMM's EXACT_ROWWISE_ADAGRAD).
ROW_STATE_BYTES = {"sgd": lambda dim: 0, "adagrad": lambda dim: 4 * dim,
                   "rowwise_adagrad": lambda dim: 4}
NVME_IOPS_PER_DRIVE = 1.4e6            # Kioxia CM6 4K random read (catalog: heise.de)
NVME_QUEUE_DEPTH_PER_DRIVE = 128       # assumption
DEFAULT_ZIPF_ALPHA = 1.0      # an assumption, flagged in the report's notes when used
GB, GIB, TB = 1e9, 2**30, 1e12
# Work caps (see simulation.cost): draws of the sample check per table, 10x the default;
# tables, each with closed forms summed over up to 2^20 rows.
MAX_SAMPLE_LOOKUPS = 1_000_000
MAX_TABLES = 1_000


# ------------------------------------------------------------------ field checks






def _obj(v, path) -> dict:
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise ScenarioError(path, f"must be an object, got {type(v).__name__}")
    return v


def _known(d, names, path):
    names = names if isinstance(names, frozenset) else frozenset(f.name for f in fields(names))
    for k in d:
        if k not in names:
            raise ScenarioError(f"{path}.{k}", f"unknown field; known fields: {', '.join(sorted(names))}")


def _widths(d, key, path, default):
    v = d.get(key, default)
    if not isinstance(v, (list, tuple)):
        raise ScenarioError(f"{path}.{key}", f"must be a list of layer widths, got {v!r}")
    for i, w in enumerate(v):
        if isinstance(w, bool) or not isinstance(w, int) or w < 1:
            raise ScenarioError(f"{path}.{key}.{i}", f"must be a whole number >= 1, got {w!r}")
    return tuple(v)


# ------------------------------------------------------------------ tables
@dataclass(frozen=True)
class TableSpec:
    """One embedding table. ``lookups_per_sample`` is the pooling factor (multi-hot
    size; 1 for one-hot). ``zipf_alpha``: skew of its lookups, 0 = uniform; None: the
    section's ``zipf_alpha``."""
    name: str
    rows: int
    dim: int
    dtype: str = "fp32"
    lookups_per_sample: float = 1.0
    zipf_alpha: float | None = None
    hash_overhead_bytes_per_row: float = 0.0

    @property
    def value_bytes(self) -> int:
        """Bytes of one row's values: what a pull, push or lookup moves."""
        return self.dim * DTYPE_BYTES[self.dtype]

    @property
    def bytes(self) -> float:
        """Bytes of the table's values (what published table sizes count)."""
        return self.rows * self.value_bytes

    @classmethod
    def from_dict(cls, d, path) -> "TableSpec":
        d = _obj(d, path)
        _known(d, cls, path)
        name = d.get("name")
        if not isinstance(name, str) or not name:
            raise ScenarioError(f"{path}.name", f"must be a non-empty string, got {name!r}")
        for k in ("rows", "dim"):
            if d.get(k) is None:
                raise ScenarioError(f"{path}.{k}", "is required")
        return cls(name=name, rows=_int(d, "rows", path), dim=_int(d, "dim", path),
                   dtype=_choice(d, "dtype", path, tuple(DTYPE_BYTES), "fp32"),
                   lookups_per_sample=_num(d, "lookups_per_sample", path, 1.0, strict=True),
                   zipf_alpha=_num(d, "zipf_alpha", path, tiny=False),
                   hash_overhead_bytes_per_row=_num(d, "hash_overhead_bytes_per_row", path, 0.0))

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


# ------------------------------------------------------------------ tiers
@dataclass(frozen=True)
class TierOption:
    """Where embedding rows may live. Per device: per GPU (hbm), per node (the rest).

    ``read_iops``: random reads per second (None: not a bound); ``queue_depth``:
    outstanding reads (Little's law: at most queue_depth / latency_s reads per second);
    ``access_bytes``: the smallest unit the medium reads (a row costs
    ceil(row / access) of them)."""
    tier: str
    capacity_bytes: float | None = None
    latency_s: float | None = None
    read_iops: float | None = None
    read_bytes_per_s: float | None = None
    queue_depth: float | None = None
    access_bytes: float = 64.0
    price_usd_per_gb: float = 0.0
    source: str = ""
    price_source: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


TIER_FIELDS = frozenset(f.name for f in fields(TierOption)) - {"tier"}

# Prices: the project's hardware catalog has cloud GPU-hour prices but no purchase price
# per GB of any memory or drive, so every price below is an assumption to override.
_PRICE = "ASSUMPTION (no per-GB price in the project's catalog; override price_usd_per_gb): "

# Defaults per tier, copied from the project's hardware catalog with their sources.
TIER_DEFAULTS: dict[str, TierOption] = {t.tier: t for t in (
    TierOption("hbm", access_bytes=32, price_usd_per_gb=300.0,
               source="capacity: the HBM left per GPU after the dense part (given by the caller); "
                      "bandwidth: the accelerator's HBM figure; 32-byte sectors (CUDA C++ "
                      "Programming Guide, device memory accesses); latency hidden by the GPU's "
                      "parallelism, so not a bound",
               price_source=_PRICE + "HBM is bought with the GPU: ~$25,000 per 80 GB H100 "
                                     "= ~$300/GB of capacity"),
    TierOption("ddr", capacity_bytes=2048 * GIB, latency_s=100e-9, read_bytes_per_s=2 * 307.2 * GB,
               queue_depth=1024, access_bytes=64, price_usd_per_gb=5.0,
               source="2 TiB DDR5-4800, 2 sockets x 8 channels = 614.4 GB/s (DGX H100; catalog: "
                      "Sapphire Rapids socket 307.2 GB/s); idle latency <100 ns (catalog: Intel "
                      "via pcper.com); 64-byte cache lines; queue_depth 1024 outstanding reads "
                      "per node is an assumption",
               price_source=_PRICE + "server DDR5 RDIMM, ~$5/GB (volatile; 2025-26 prices rose)"),
    TierOption("cxl", capacity_bytes=4 * 256 * GIB, latency_s=250e-9, read_bytes_per_s=4 * 36 * GB,
               queue_depth=1024, access_bytes=64, price_usd_per_gb=8.0,
               source="4x Micron CZ120 256 GB CXL 2.0, 36 GB/s each (MLC 2:1; catalog: Tom's "
                      "Hardware); 250 ns within the 140-410 ns measured on real devices (catalog: "
                      "Melody, ASPLOS'25); queue_depth assumed as DDR",
               price_source=_PRICE + "DDR5 plus CXL controller and E3.S module, ~$8/GB"),
    TierOption("pmem", capacity_bytes=2 * 6 * 256 * GB, latency_s=305e-9,
               read_bytes_per_s=2 * 39.4 * GB, queue_depth=1024, access_bytes=256,
               price_usd_per_gb=4.5,
               source="Optane PMem 100: 2 sockets x 6x 256 GB; 39.4 GB/s read per 6 interleaved "
                      "DIMMs, 305 ns random read (catalog: Izraelevitz et al., arXiv 1903.05714); "
                      "256-byte media access (XPLine; Yang et al., FAST'20)",
               price_source=_PRICE + "Intel's 2019 list price $577 per 128 GB DIMM (~$4.5/GB, "
                                     "as reported by hwsw.hu); discontinued, last shipments 2025"),
    TierOption("nvme", capacity_bytes=8 * 3.84 * TB, latency_s=60e-6, read_iops=8 * NVME_IOPS_PER_DRIVE,
               read_bytes_per_s=8 * 6.9 * GB, queue_depth=8 * NVME_QUEUE_DEPTH_PER_DRIVE,
               access_bytes=4096,
               price_usd_per_gb=0.10,
               source="8x 3.84 TB U.2 (DGX H100), Kioxia CM6-class: 6.9 GB/s and 1,400K 4K random "
                      "reads/s each (catalog: heise.de); 60 us read latency (catalog: Micron 9550 "
                      "spec table); 4 KiB pages; queue depth 128 per drive is an assumption",
               price_source=_PRICE + "enterprise TLC NVMe, ~$0.10/GB"),
)}


def _tier_overrides(d, path) -> dict | None:
    if d is None:
        return None
    out = {}
    for name, v in _obj(d, path).items():
        where = f"{path}.{name}"
        if name not in TIER_ORDER:
            raise ScenarioError(where, f"unknown tier; known tiers: {', '.join(TIER_ORDER)}")
        v = _obj(v, where)
        _known(v, TIER_FIELDS, where)
        o = {}
        for k in ("capacity_bytes", "latency_s"):
            if k in v:
                o[k] = _num(v, k, where)
        for k in ("read_iops", "read_bytes_per_s", "queue_depth", "access_bytes"):
            if k in v:
                o[k] = _num(v, k, where, strict=True)
        if "price_usd_per_gb" in v:
            o["price_usd_per_gb"] = _num(v, "price_usd_per_gb", where)
        for k in ("source", "price_source"):
            if k in v:
                if not isinstance(v[k], str):
                    raise ScenarioError(f"{where}.{k}", f"must be a string, got {v[k]!r}")
                o[k] = v[k]
        out[name] = o
    if not out:
        raise ScenarioError(path, f"needs at least one tier ({', '.join(TIER_ORDER)})")
    return out


# ------------------------------------------------------------------ parameter server
@dataclass(frozen=True)
class PSSpec:
    """Parameter-server deployment. ``servers``: shards (default: one per worker node);
    ``replication``: copies of every row (each push is forwarded to replication - 1
    backups); heartbeats: every node messages the scheduler every interval."""
    servers: int | None = None
    server_nic_bytes_per_s: float = 50 * GB
    replication: int = 1
    heartbeat_interval_s: float = 5.0
    heartbeat_bytes: float = 128.0
    source: str = ("one 400 Gb/s NIC (50 GB/s) per server (catalog: ConnectX-7 / NDR); heartbeat "
                   "interval and size are assumptions")

    @classmethod
    def from_dict(cls, d, path="recsys.ps") -> "PSSpec":
        d = _obj(d, path)
        _known(d, cls, path)
        return cls(servers=_int(d, "servers", path),
                   server_nic_bytes_per_s=_num(d, "server_nic_bytes_per_s", path, 50 * GB, strict=True),
                   replication=_int(d, "replication", path, 1),
                   heartbeat_interval_s=_num(d, "heartbeat_interval_s", path, 5.0, strict=True),
                   heartbeat_bytes=_num(d, "heartbeat_bytes", path, 128.0),
                   source=str(d.get("source", cls.source)))

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


# ------------------------------------------------------------------ presets
_V1_ROWS = [39884406, 39043, 17289, 7420, 20263, 3, 7120, 1543, 63, 38532951, 2953546, 403346,
            10, 2208, 11938, 155, 4, 976, 14, 39979771, 25641295, 39664984, 585935, 12972, 108, 36]
_V2_ROWS = [40000000, 39060, 17295, 7424, 20265, 3, 7122, 1543, 63, 40000000, 3067956, 405282,
            10, 2209, 11938, 155, 4, 976, 14, 40000000, 40000000, 40000000, 590152, 12973, 108, 36]
_V2_HOT = [3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1, 6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1]


def _tables(rows, hot=None):
    return [dict(name=f"C{i + 1}", rows=r, dim=128, dtype="fp32",
                 lookups_per_sample=(hot[i] if hot else 1)) for i, r in enumerate(rows)]


PRESETS: dict[str, dict] = {
    "dlrm-mlperf-v1": dict(
        name="DLRM, MLPerf v1 (Criteo 1TB, 40M rows cap)", tables=_tables(_V1_ROWS),
        bottom_mlp=[13, 512, 256, 128], top_mlp=[1024, 1024, 512, 256, 1], interaction="dot",
        batch_size=2048,
        source="facebookresearch/dlrm bench/run_and_time.sh (MLPerf flags, --mini-batch-size=2048) "
               "and tools/visualize.py (table sizes for --max-ind-range=40000000)"),
    "dlrm-mlperf-v2": dict(
        name="DLRM-DCNv2, MLPerf v2 (Criteo 1TB multi-hot)", tables=_tables(_V2_ROWS, _V2_HOT),
        bottom_mlp=[13, 512, 256, 128], top_mlp=[1024, 1024, 512, 256, 1], interaction="dcn",
        dcn_num_layers=3, dcn_low_rank_dim=512, batch_size=65536, embedding_optimizer="adagrad",
        multi_hot_distribution="uniform",
        source="mlcommons/training recommendation_v2/torchrec_dlrm/README.MD (benchmark "
               "command: multi-hot sizes, DCN 3 layers rank 512, Adagrad, global batch 65536; "
               "--multi_hot_distribution_type uniform)"),
}


# ------------------------------------------------------------------ the section
@dataclass(frozen=True)
class RecModelSpec:
    """A recommendation model and how its embeddings are stored and served."""
    tables: tuple = ()
    bottom_mlp: tuple = ()
    top_mlp: tuple = ()
    interaction: str = "dot"
    dcn_num_layers: int | None = None
    dcn_low_rank_dim: int | None = None
    batch_size: int = 1
    zipf_alpha: float | None = None         # default for tables without their own
    tiers: dict | None = None               # tier -> overrides of TIER_DEFAULTS; None: default set
    ps: PSSpec = field(default_factory=PSSpec)
    embedding_optimizer: str = "sgd"
    multi_hot_distribution: str = "zipf"
    comm_dtype: str = "fp32"
    dense_step_s: float | None = None
    sample_lookups: int = 100_000
    seed: int = 0
    name: str = "custom"
    preset: str | None = None
    source: str | None = None

    def alpha(self, t: TableSpec) -> float:
        """The table's Zipf alpha: its own, else the section's, else DEFAULT_ZIPF_ALPHA."""
        for a in (t.zipf_alpha, self.zipf_alpha):
            if a is not None:
                return a
        return DEFAULT_ZIPF_ALPHA

    @property
    def alpha_assumed(self) -> bool:
        return self.zipf_alpha is None and any(t.zipf_alpha is None for t in self.tables)

    def row_bytes(self, t: TableSpec) -> float:
        """Bytes one row occupies where it is stored: values, the optimizer's state for
        the row and any hash-table overhead."""
        return t.value_bytes + ROW_STATE_BYTES[self.embedding_optimizer](t.dim) + t.hash_overhead_bytes_per_row

    @property
    def embedding_bytes(self) -> float:
        """Bytes of all tables' values (the published sizes)."""
        return sum(t.bytes for t in self.tables)

    @property
    def stored_bytes(self) -> float:
        """Bytes the tiers must hold: values + optimizer state + overhead."""
        return sum(t.rows * self.row_bytes(t) for t in self.tables)

    @property
    def top_mlp_input(self) -> int:
        """DLRM dot: dense vector + F(F-1)/2 pairwise dots of F = tables + 1 features
        (dlrm_s_pytorch.py); DCN keeps the concatenation, F * dim (TorchRec DLRM_DCN)."""
        f, dim = len(self.tables) + 1, self.bottom_mlp[-1]
        return dim + f * (f - 1) // 2 if self.interaction == "dot" else f * dim

    @property
    def dense_params(self) -> dict:
        """Parameters of the MLPs (weights + biases) and of DCNv2's low-rank cross layers
        (per layer U: d x r, V: r x d, bias d; TorchRec LowRankCrossNet)."""
        mlp = lambda w: sum(a * b + b for a, b in zip(w[:-1], w[1:]))   # noqa: E731
        top = mlp((self.top_mlp_input,) + self.top_mlp) if self.top_mlp else 0
        d = self.top_mlp_input
        cross = (self.dcn_num_layers or 0) * (2 * d * (self.dcn_low_rank_dim or 0) + d) \
            if self.interaction == "dcn" else 0
        return dict(bottom_mlp=mlp(self.bottom_mlp), top_mlp=top, interaction=cross,
                    total=mlp(self.bottom_mlp) + top + cross)

    @classmethod
    def from_dict(cls, d: dict | None, path: str = "recsys") -> "RecModelSpec":
        d = _obj(d, path)
        _known(d, cls, path)
        d = dict(d)
        name = d.get("preset")
        if name is not None:
            if name not in PRESETS:
                raise ScenarioError(f"{path}.preset", f"unknown recsys preset {name!r}; known: "
                                    f"{', '.join(sorted(PRESETS))}")
            d = {**PRESETS[name], **{k: v for k, v in d.items() if v is not None}}
        raw = d.get("tables")
        if not isinstance(raw, (list, tuple)) or not raw:
            raise ScenarioError(f"{path}.tables", "is required: a non-empty list of tables (or a preset)")
        if len(raw) > MAX_TABLES:
            raise ScenarioError(f"{path}.tables", f"at most {MAX_TABLES:,} tables, got {len(raw):,}")
        tables = tuple(TableSpec.from_dict(t, f"{path}.tables.{i}") for i, t in enumerate(raw))
        seen = set()
        for i, t in enumerate(tables):
            if t.name in seen:
                raise ScenarioError(f"{path}.tables.{i}.name", f"duplicate table name {t.name!r}")
            seen.add(t.name)
        if d.get("batch_size") is None:
            raise ScenarioError(f"{path}.batch_size", "is required (global samples per step)")
        interaction = _choice(d, "interaction", path, INTERACTIONS, "dot")
        s = cls(tables=tables, bottom_mlp=_widths(d, "bottom_mlp", path, ()),
                top_mlp=_widths(d, "top_mlp", path, ()), interaction=interaction,
                dcn_num_layers=_int(d, "dcn_num_layers", path, 3 if interaction == "dcn" else None),
                dcn_low_rank_dim=_int(d, "dcn_low_rank_dim", path, 512 if interaction == "dcn" else None),
                batch_size=_int(d, "batch_size", path), zipf_alpha=_num(d, "zipf_alpha", path, tiny=False),
                tiers=_tier_overrides(d.get("tiers"), f"{path}.tiers"),
                ps=PSSpec.from_dict(d.get("ps"), f"{path}.ps"),
                embedding_optimizer=_choice(d, "embedding_optimizer", path, tuple(ROW_STATE_BYTES), "sgd"),
                multi_hot_distribution=_choice(d, "multi_hot_distribution", path,
                                               MULTI_HOT_DISTRIBUTIONS, "zipf"),
                comm_dtype=_choice(d, "comm_dtype", path, ("fp32", "fp16", "bf16"), "fp32"),
                dense_step_s=_num(d, "dense_step_s", path),
                sample_lookups=_int(d, "sample_lookups", path, 100_000, minimum=0,
                                    maximum=MAX_SAMPLE_LOOKUPS),
                seed=_int(d, "seed", path, 0, minimum=0),
                name=d.get("name") or "custom", preset=name, source=d.get("source"))
        if not s.bottom_mlp:
            raise ScenarioError(f"{path}.bottom_mlp", "needs at least the dense input width")
        for i, t in enumerate(tables):
            if t.dim != s.bottom_mlp[-1]:
                raise ScenarioError(f"{path}.tables.{i}.dim", f"the {interaction} interaction needs "
                                    f"every dim to equal the last bottom_mlp width "
                                    f"({s.bottom_mlp[-1]}), got {t.dim}")
        if interaction != "dcn" and (d.get("dcn_num_layers") or d.get("dcn_low_rank_dim")):
            raise ScenarioError(f"{path}.dcn_num_layers", "applies to interaction dcn only")
        return s

    def to_dict(self) -> dict:
        out = {k: getattr(self, k) for k in ("name", "preset", "source", "interaction",
                                              "dcn_num_layers", "dcn_low_rank_dim", "batch_size",
                                              "zipf_alpha", "tiers", "embedding_optimizer",
                                              "comm_dtype", "dense_step_s", "sample_lookups", "seed")}
        if self.multi_hot_distribution != "zipf":         # the default stays out of saved specs
            out["multi_hot_distribution"] = self.multi_hot_distribution
        out.update(tables=[t.to_dict() for t in self.tables], bottom_mlp=list(self.bottom_mlp),
                   top_mlp=list(self.top_mlp), ps=self.ps.to_dict())
        return {k: v for k, v in out.items() if v is not None}


def resolve_tiers(spec: RecModelSpec, *, hbm_free_bytes_per_gpu: float | None = None,
                  hbm_bytes_per_s: float | None = None, node_tiers: dict | None = None) -> list:
    """The tiers embeddings may use, hottest first, each a full :class:`TierOption`.

    Figures come from the spec's overrides, else the node's tier (``node_tiers``:
    name -> ``{capacity_bytes, read_bytes_per_s, latency_s, devices}``, as
    ``cluster.tiers``), else :data:`TIER_DEFAULTS`. Without ``recsys.tiers`` the set is
    HBM plus the node's DDR, CXL and NVMe (HBM, DDR, NVMe without a node); PMEM only
    when asked for.
    """
    node_tiers = node_tiers or {}
    names = list(spec.tiers) if spec.tiers is not None else (
        ["hbm"] + ([t for t in TIER_ORDER if t in node_tiers] or ["ddr", "nvme"]))
    out = []
    for name in sorted(set(names), key=TIER_ORDER.index):
        t = TIER_DEFAULTS[name]
        node = node_tiers.get(name)
        if name == "hbm":
            t = replace(t, capacity_bytes=hbm_free_bytes_per_gpu, read_bytes_per_s=hbm_bytes_per_s)
        elif node:
            t = replace(t, capacity_bytes=node.get("capacity_bytes", t.capacity_bytes),
                        read_bytes_per_s=node.get("read_bytes_per_s", t.read_bytes_per_s),
                        latency_s=node.get("latency_s") or t.latency_s,
                        source=f"the node's {name.upper()} tier (cluster.tiers.{name}); other "
                               f"figures: {t.source}")
            if name == "nvme" and node.get("devices"):
                n = node["devices"]
                t = replace(t, read_iops=n * NVME_IOPS_PER_DRIVE, queue_depth=n * NVME_QUEUE_DEPTH_PER_DRIVE)
        t = replace(t, **(spec.tiers or {}).get(name, {}))
        where = f"recsys.tiers.{name}"
        if t.capacity_bytes is None:
            raise ScenarioError(f"{where}.capacity_bytes",
                                "is required (HBM left per GPU after the dense part)" if name == "hbm"
                                else "is required")
        if not t.read_bytes_per_s:
            raise ScenarioError(f"{where}.read_bytes_per_s", "is required")
        out.append(t)
    return out
