// Display units. The engine speaks SI (bytes, seconds); every number shown carries its unit.
// GB = 1e9 bytes (what the engine and datasheets call GB), GiB = 2^30 bytes (what
// nvidia-smi and `free -g` show). One convention for capacities (`tierUnit`): memory (GPU HBM,
// host DDR, CXL, PMem) reads in binary GiB / TiB, as nvidia-smi, `free` and `numactl -H`
// report it; drives (NVMe) in decimal GB / TB by size, as their datasheets and `df -H` do.
// Rates and traffic are decimal (GB/s). Numbers are formatted en-US (Intl.NumberFormat) so
// output is stable.

export const GB = 1e9;
export const GIB = 2 ** 30;

const formatters = new Map<number, Intl.NumberFormat>();

/** A number with exactly `digits` decimals and thousands separators: 30720 -> "30,720.0". */
export function formatNumber(value: number, digits = 1): string {
  if (!Number.isFinite(value)) return value > 0 ? "∞" : value < 0 ? "-∞" : "—";
  let fmt = formatters.get(digits);
  if (!fmt) {
    fmt = new Intl.NumberFormat("en-US", {
      minimumFractionDigits: digits,
      maximumFractionDigits: digits,
    });
    formatters.set(digits, fmt);
  }
  const text = fmt.format(value);
  // -0.04 rounds to "-0.0": show it as "0.0".
  return /^-0(\.0*)?$/.test(text) ? text.slice(1) : text;
}

/** Bytes as decimal gigabytes: 85.1e9 -> "85.1 GB". */
export function formatGB(bytes: number, digits = 1): string {
  return `${formatNumber(bytes / GB, digits)} GB`;
}

/** Bytes as binary gibibytes: 2^30 * 79.3 -> "79.3 GiB". */
export function formatGiB(bytes: number, digits = 1): string {
  return `${formatNumber(bytes / GIB, digits)} GiB`;
}

/** A unit of bytes: its symbol, the axis name that spells it out, and its size in bytes. */
export interface ByteUnit {
  symbol: string;
  axis: string;
  bytes: number;
}

export const UNIT_GB: ByteUnit = { symbol: "GB", axis: "GB (10⁹ bytes)", bytes: GB };
export const UNIT_TB: ByteUnit = { symbol: "TB", axis: "TB (10¹² bytes)", bytes: 1e12 };
export const UNIT_PB: ByteUnit = { symbol: "PB", axis: "PB (10¹⁵ bytes)", bytes: 1e15 };
export const UNIT_GIB: ByteUnit = { symbol: "GiB", axis: "GiB (2³⁰ bytes)", bytes: GIB };
export const UNIT_TIB: ByteUnit = { symbol: "TiB", axis: "TiB (2⁴⁰ bytes)", bytes: 2 ** 40 };

/** The decimal unit that reads `bytes` best: GB below 1 TB, TB below 1 PB, then PB. */
export function decimalUnit(bytes: number): ByteUnit {
  const abs = Math.abs(bytes);
  return abs >= 1e15 ? UNIT_PB : abs >= 1e12 ? UNIT_TB : UNIT_GB;
}

/** The binary unit that reads `bytes` best: GiB below 1 TiB, then TiB. */
export function binaryUnit(bytes: number): ByteUnit {
  return Math.abs(bytes) >= 2 ** 40 ? UNIT_TIB : UNIT_GIB;
}

/** The tiers that are drives, read in decimal units; every other tier is memory. */
const DRIVE_TIERS: ReadonlySet<string> = new Set(["nvme"]);

/**
 * The unit a tier's bytes are read in, scaled to `bytes` (the larger of use and capacity):
 * memory (HBM, DDR, CXL, PMem) in binary GiB / TiB, as nvidia-smi, torch.cuda and `free`
 * report it (an "80 GB" H100 is 79.6 GiB; a node's 2 TiB of DDR is "2.0 TiB"); drives (NVMe)
 * in the decimal unit their datasheets use (eight 3.84 TB drives are "30.7 TB").
 */
export function tierUnit(tier: string, bytes: number): ByteUnit {
  return DRIVE_TIERS.has(tier) ? decimalUnit(bytes) : binaryUnit(bytes);
}

/** Bytes in `unit`: 30.72e12 in TB -> "30.7 TB". */
export function formatIn(bytes: number, unit: ByteUnit, digits = 1): string {
  return `${formatNumber(bytes / unit.bytes, digits)} ${unit.symbol}`;
}

/** Bytes in the decimal unit that suits them: 85.1e9 -> "85.1 GB", 30.72e12 -> "30.7 TB". */
export function formatSI(bytes: number, digits = 1): string {
  return formatIn(bytes, decimalUnit(bytes), digits);
}

/** A tier's bytes as its users read them (see `tierUnit`): HBM "79.3 GiB", DDR "2.0 TiB", NVMe "30.7 TB". */
export function formatTierBytes(bytes: number, tier: string, digits = 1): string {
  return formatIn(bytes, tierUnit(tier, bytes), digits);
}

/** Both units, each scaled to the size: "85.1 GB (79.3 GiB)", "30.7 TB (27.9 TiB)"; under
 *  0.1 GB two significant digits, so a small part is not shown as nothing: 4e7 -> "0.040 GB
 *  (0.037 GiB)". */
export function formatBytes(bytes: number, digits = 1): string {
  const small = (unit: ByteUnit) => {
    const x = Math.abs(bytes) / unit.bytes;
    return x > 0 && x < 0.1 ? Math.min(6, Math.max(digits, 1 - Math.floor(Math.log10(x)))) : digits;
  };
  const si = decimalUnit(bytes);
  const bin = binaryUnit(bytes);
  return `${formatIn(bytes, si, small(si))} (${formatIn(bytes, bin, small(bin))})`;
}

const MINUTE_S = 60;
const HOUR_S = 3600;
const DAY_S = 86400;
/** A Julian year, 365.25 days (the IAU's, and what `date` arithmetic over years averages to). */
const YEAR_S = 365.25 * DAY_S;

/**
 * Seconds with a unit that suits the size: "850 µs", "12.3 ms", "4.20 s", "1.5 min", "2.0 h",
 * "59.3 days", "20.3 years" (a year is 365.25 days). The one formatter of a duration: a step of
 * 640,663,255 s reads "20.3 years", never nine digits of seconds.
 */
export function formatSeconds(seconds: number): string {
  if (!Number.isFinite(seconds)) return formatNumber(seconds);
  const abs = Math.abs(seconds);
  if (abs === 0) return "0 s";
  if (abs < 1e-6) return `${formatNumber(seconds * 1e9, 0)} ns`;     // CXL/NVMe latencies
  if (abs < 1e-3) return `${formatNumber(seconds * 1e6, abs < 1e-5 ? 1 : 0)} µs`;
  if (abs < 1) return `${formatNumber(seconds * 1e3, 1)} ms`;
  if (abs < MINUTE_S) return `${formatNumber(seconds, 2)} s`;
  if (abs < HOUR_S) return `${formatNumber(seconds / MINUTE_S, 1)} min`;
  if (abs < 2 * DAY_S) return `${formatNumber(seconds / HOUR_S, 1)} h`;
  if (abs < YEAR_S) return `${formatNumber(seconds / DAY_S, 1)} days`;
  return `${formatNumber(seconds / YEAR_S, 1)} years`;
}

/** A unit a duration axis is read in: its symbol and its size in seconds. */
export interface TimeUnit {
  symbol: string;
  seconds: number;
}

export const TIME_UNITS: readonly TimeUnit[] = [
  { symbol: "s", seconds: 1 },
  { symbol: "min", seconds: MINUTE_S },
  { symbol: "h", seconds: HOUR_S },
  { symbol: "days", seconds: DAY_S },
  { symbol: "years", seconds: YEAR_S },
];

/**
 * The unit an axis up to `maxSeconds` reads best in: seconds below 10 min (a step's parts of
 * milliseconds keep their decimals), minutes below 3 h, hours below 3 days, days below 2
 * years, then years: an axis to 2e9 s reads "0 years … 60 years", not "2,000,000,000 s".
 */
export function durationUnit(maxSeconds: number): TimeUnit {
  const abs = Math.abs(maxSeconds);
  if (!Number.isFinite(abs) || abs < 10 * MINUTE_S) return TIME_UNITS[0];
  if (abs < 3 * HOUR_S) return TIME_UNITS[1];
  if (abs < 3 * DAY_S) return TIME_UNITS[2];
  if (abs < 2 * YEAR_S) return TIME_UNITS[3];
  return TIME_UNITS[4];
}

/**
 * An ECharts axisLabel formatter for seconds on an axis up to `maxSeconds`: each tick in the
 * axis's `durationUnit` with its symbol ("2.5 s", "40 min", "15.84 years"); at most
 * `maxDigits` decimals of seconds, at most 2 of a larger unit (the ticks are round in
 * seconds, 5e8 s, so a year's tick has decimals; two tell neighbours apart).
 */
export function durationTickFormatter(maxSeconds: number, maxDigits = 3): (v: number) => string {
  const unit = durationUnit(maxSeconds);
  const digits = unit.seconds === 1 ? maxDigits : Math.min(maxDigits, 2);
  return (v: number) => `${formatTick(v / unit.seconds, digits)} ${unit.symbol}`;
}

/** A fraction as a percentage: 0.4567 -> "45.7%". */
export function formatPercent(fraction: number, digits = 1): string {
  return `${formatNumber(fraction * 100, digits)}%`;
}

/** A large count with a short suffix: 68976648192 -> "69.0 B" (billion). */
export function formatCount(n: number, digits = 1): string {
  const abs = Math.abs(n);
  if (abs >= 1e12) return `${formatNumber(n / 1e12, digits)} T`;
  if (abs >= 1e9) return `${formatNumber(n / 1e9, digits)} B`;
  if (abs >= 1e6) return `${formatNumber(n / 1e6, digits)} M`;
  if (abs >= 1e3) return `${formatNumber(n / 1e3, digits)} k`;
  return formatNumber(n, 0);
}

/** A parameter count: "69.0 B parameters (68,976,648,192)". */
export function formatParams(n: number): string {
  return `${formatCount(n)} parameters (${formatNumber(n, 0)})`;
}

/** Bytes per parameter: 16 -> "16 B/param", 0.5 -> "0.5 B/param". */
export function formatBytesPerParam(b: number): string {
  const text = Number.isInteger(b) ? formatNumber(b, 0) : formatNumber(b, 2).replace(/0$/, "");
  return `${text} B/param`;
}

/** A bandwidth in decimal gigabytes per second: 4e10 -> "40.0 GB/s". */
export function formatGBps(bytesPerSecond: number, digits = 1): string {
  return `${formatNumber(bytesPerSecond / GB, digits)} GB/s`;
}

/**
 * A long duration in hours and minutes, for checkpoint intervals, MTBF and restarts:
 * 45 -> "45.0 s", 750 -> "12 min 30 s", 4984 -> "1 h 23 min", 11.4e6 -> "132.0 days (3,167 h)",
 * 6.4e8 -> "20.3 years (7,415 days)".
 */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds)) return formatNumber(seconds);
  const abs = Math.abs(seconds);
  const sign = seconds < 0 ? "-" : "";
  if (abs < 60) return `${sign}${formatNumber(abs, 1)} s`;
  if (abs < 3600) {
    let min = Math.floor(abs / 60);
    let sec = Math.round(abs - min * 60);
    if (sec === 60) { min += 1; sec = 0; }
    return min >= 60 ? `${sign}1 h 0 min` : `${sign}${min} min${sec ? ` ${sec} s` : ""}`;
  }
  if (abs < 2 * 86400) {
    let hours = Math.floor(abs / 3600);
    let min = Math.round((abs - hours * 3600) / 60);
    if (min === 60) { hours += 1; min = 0; }
    return `${sign}${hours} h${min ? ` ${min} min` : ""}`;
  }
  if (abs < YEAR_S) return `${sign}${formatNumber(abs / 86400, 1)} days (${formatNumber(abs / 3600, 0)} h)`;
  return `${sign}${formatNumber(abs / YEAR_S, 1)} years (${formatNumber(abs / 86400, 0)} days)`;
}

/** Seconds as milliseconds with 1 decimal: 0.0401088 -> "40.1 ms". */
export function formatMs(seconds: number, digits = 1): string {
  return `${formatNumber(seconds * 1e3, digits)} ms`;
}

const trimmed = new Map<number, Intl.NumberFormat>();

/** An axis tick: at most `maxDigits` decimals, trailing zeros dropped: 2.5 -> "2.5", 10 -> "10", 1234 -> "1,234". */
export function formatTick(value: number, maxDigits = 3): string {
  if (!Number.isFinite(value)) return formatNumber(value);
  let fmt = trimmed.get(maxDigits);
  if (!fmt) {
    fmt = new Intl.NumberFormat("en-US", { minimumFractionDigits: 0, maximumFractionDigits: maxDigits });
    trimmed.set(maxDigits, fmt);
  }
  const text = fmt.format(value);
  return text === "-0" ? "0" : text;
}

/** How many decimals show three significant digits of `x` (at least `min`, at most 9). */
function sigDigits(x: number, min: number): number {
  const abs = Math.abs(x);
  if (abs === 0 || !Number.isFinite(abs)) return min;
  return Math.max(min, Math.min(9, 2 - Math.floor(Math.log10(abs))));
}

/** Milliseconds with three significant digits: 0.0731 -> "73.1 ms", 5.57e-4 -> "0.557 ms", 1.02e-6 -> "0.00102 ms". */
export function formatMsSig(seconds: number): string {
  if (!Number.isFinite(seconds)) return formatNumber(seconds);
  const ms = seconds * 1e3;
  return ms === 0 ? "0 ms" : `${formatNumber(ms, sigDigits(ms, 0))} ms`;
}

/** Seconds with at least 3 decimals, more for small ones (3 significant digits): 1.5 -> "1.500 s",
 *  7.25e-4 -> "0.000725 s"; a minute or more in the unit that suits it (`formatSeconds`):
 *  640663255.3 -> "20.3 years". */
export function formatSecondsSig(seconds: number): string {
  if (Math.abs(seconds) >= MINUTE_S) return formatSeconds(seconds);
  return `${formatNumber(seconds, sigDigits(seconds, 3))} s`;
}

/** "1 GPU", "8 GPUs": a count with its noun, plural unless the count is 1. */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
