// Fetch helpers for tierlab's REST API: JSON in and out, Django's CSRF token on unsafe
// methods, session cookies, and errors that keep the server's 400 body.

import type { CatalogEntry } from "./types";

/** A cookie's value, or null. */
export function getCookie(name: string, cookieString?: string): string | null {
  const source = cookieString ?? (typeof document !== "undefined" ? document.cookie : "");
  for (const piece of source.split(";")) {
    const eq = piece.indexOf("=");
    if (eq < 0) continue;
    if (piece.slice(0, eq).trim() === name) {
      return decodeURIComponent(piece.slice(eq + 1).trim());
    }
  }
  return null;
}

/** Django's CSRF token: the `csrftoken` cookie, else a rendered `csrfmiddlewaretoken` input. */
export function csrfToken(): string | null {
  const fromCookie = getCookie("csrftoken");
  if (fromCookie) return fromCookie;
  if (typeof document === "undefined") return null;
  const input = document.querySelector<HTMLInputElement>('input[name="csrfmiddlewaretoken"]');
  return input?.value || null;
}

/** Field errors: dotted field path -> messages. "" holds messages about no one field. */
export type FieldErrors = Record<string, string[]>;

const GENERAL_KEYS = new Set(["detail", "body", "non_field_errors", "__all__", "error", "message"]);
const FIELD_PREFIX = /^([A-Za-z_][\w]*(?:\.[\w]+)+):\s+(.+)$/s;

/**
 * Flattens a DRF-style error body into dotted keys.
 *
 * `{"scenario": {"training": {"global_batch_size": ["x"]}}}` and
 * `{"scenario.training.global_batch_size": "x"}` both give
 * `{"scenario.training.global_batch_size": ["x"]}`. A message under a key that reads
 * `"training.global_batch_size: must divide ..."` (the engine's ScenarioError text) is moved
 * under `<key>.training.global_batch_size`. `detail` / `body` / `non_field_errors` go under "".
 */
export function flattenErrors(body: unknown, prefix = ""): FieldErrors {
  const out: FieldErrors = {};
  const add = (key: string, msg: string) => {
    let k = key;
    let m = msg;
    const hit = FIELD_PREFIX.exec(msg);
    if (hit && (key === "" || key === "scenario")) {
      k = key ? `${key}.${hit[1]}` : hit[1];
      m = hit[2];
    }
    (out[k] ??= []).push(m);
  };
  const walk = (value: unknown, key: string) => {
    if (value == null) return;
    if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") {
      add(key, String(value));
    } else if (Array.isArray(value)) {
      value.forEach((item) => walk(item, key));
    } else if (typeof value === "object") {
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
        const child = GENERAL_KEYS.has(k) ? key : key ? `${key}.${k}` : k;
        walk(v, child);
      }
    }
  };
  walk(body, prefix);
  return out;
}

/** An HTTP error from the API: status, the parsed body, and its field errors. */
export class ApiError extends Error {
  readonly status: number;
  readonly body: unknown;
  readonly fieldErrors: FieldErrors;

  constructor(status: number, body: unknown, message?: string) {
    const fieldErrors = flattenErrors(body);
    const first = Object.entries(fieldErrors)[0];
    super(
      message ??
        (first ? (first[0] ? `${first[0]}: ${first[1][0]}` : first[1][0]) : `HTTP ${status}`),
    );
    this.name = "ApiError";
    this.status = status;
    this.body = body;
    this.fieldErrors = fieldErrors;
  }
}

const UNSAFE = new Set(["POST", "PUT", "PATCH", "DELETE"]);

export interface RequestOptions {
  method?: string;
  body?: unknown;
  signal?: AbortSignal;
}

/** Sends a JSON request; resolves with the parsed body, rejects with ApiError on non-2xx. */
export async function apiFetch<T>(url: string, options: RequestOptions = {}): Promise<T> {
  const method = (options.method ?? (options.body === undefined ? "GET" : "POST")).toUpperCase();
  const headers: Record<string, string> = { Accept: "application/json" };
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  if (UNSAFE.has(method)) {
    const token = csrfToken();
    if (token) headers["X-CSRFToken"] = token;
  }
  const response = await fetch(url, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    credentials: "same-origin",
    signal: options.signal,
  });
  const text = await response.text();
  let data: unknown = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = response.ok ? text : { detail: text.slice(0, 500) };
    }
  }
  if (!response.ok) {
    const fallback =
      data == null
        ? { detail: `${response.status} ${response.statusText}`.trim() }
        : data;
    throw new ApiError(response.status, fallback);
  }
  return data as T;
}

export function getJSON<T>(url: string, signal?: AbortSignal): Promise<T> {
  return apiFetch<T>(url, { method: "GET", signal });
}

export function postJSON<T>(url: string, body: unknown, signal?: AbortSignal): Promise<T> {
  return apiFetch<T>(url, { method: "POST", body, signal });
}

/** A list endpoint, plain (`[...]`) or paginated (`{results, next}`), all pages. */
export async function getList<T>(url: string, maxPages = 20): Promise<T[]> {
  const items: T[] = [];
  let next: string | null = url;
  for (let page = 0; next && page < maxPages; page++) {
    const data: unknown = await getJSON<unknown>(next);
    if (Array.isArray(data)) return items.concat(data as T[]);
    const paged = data as { results?: T[]; next?: string | null };
    items.push(...(paged.results ?? []));
    next = paged.next ?? null;
  }
  return items;
}

export const endpoints = {
  models: "/api/v1/catalog/models/",
  nodes: "/api/v1/catalog/nodes/",
  scenarios: "/api/v1/scenarios/",
  scenarioRuns: (id: number | string) => `/api/v1/scenarios/${encodeURIComponent(String(id))}/runs/`,
  estimate: "/api/v1/estimate/",
  modelFromHfConfig: "/api/v1/models/from-hf-config/",
  clusterProfiles: "/api/v1/cluster-profiles/",
  runPage: (id: number | string) => `/runs/${encodeURIComponent(String(id))}/`,
};

export function listCatalog(url: string): Promise<CatalogEntry[]> {
  return getList<CatalogEntry>(url);
}
