"""OpenAPI schema additions: the error responses every operation can give.

drf-spectacular documents only the success response of each operation; clients (and the
schemathesis fuzz test) need the errors too. This postprocessing hook adds, where they can
occur and unless a view documented its own: 400 (field errors), 401/403, 404, 410 (a revoked
share link: the shared view, its downloads and fork), 413, 415, 422 (an ``Idempotency-Key``
reused for another request), 429 (a rate limit, tierlab.throttling: every operation) and 409
(a limit of active runs, sweeps or plans, tierlab.jobs.check_active, where one is queued).
"""

SHARED_PREFIX = "/api/v1/shared/{token}/"
# POSTs that queue runs, sweeps or plans: a 409 at the user's limit of active ones.
QUEUES_JOBS = ("/api/v1/scenarios/{id}/runs/", "/api/v1/sweeps/", "/api/v1/plans/", "/api/v1/comparisons/",
               "/api/v1/shared/{token}/fork/")
THROTTLED = {
    "type": "object", "properties": {"detail": {"type": "string"}, "retry_after_s": {"type": "integer"}},
    "required": ["detail", "retry_after_s"],
    "description": "A rate limit: which, its setting and when to try again (also the `Retry-After` header)."}
ACTIVE_LIMIT = {
    "type": "object", "required": ["detail", "limit", "setting", "active"],
    "properties": {"detail": {"type": "string"}, "limit": {"type": "integer"}, "setting": {"type": "string"},
                   "active": {"type": "array", "items": {"type": "object", "properties": {
                       "id": {"type": "integer"}, "name": {"type": "string"}, "status": {"type": "string"},
                       "url": {"type": "string"}}}}},
    "description": "Your queued or running runs, sweeps or plans are at their limit (`setting`); nothing was queued."}

ERROR = {"type": "object", "properties": {"detail": {"type": "string"}}, "required": ["detail"],
         "description": "What went wrong, e.g. `{\"detail\": \"Not found.\"}`."}
FIELD_ERRORS = {
    "type": "object", "additionalProperties": {},
    "description": "Messages per field, e.g. `{\"scenario.training.global_batch_size\": "
                   "[\"must be a multiple of ...\"]}`; a malformed or oversized body is "
                   "reported under `body`."}


def _ref(name):
    return {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}}


def add_error_responses(result, generator, request, public):
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas.setdefault("Error", ERROR)
    schemas.setdefault("FieldErrors", FIELD_ERRORS)
    schemas.setdefault("Throttled", THROTTLED)
    schemas.setdefault("ActiveLimit", ACTIVE_LIMIT)
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            params = operation.get("parameters", [])
            query = {p["name"] for p in params if p.get("in") == "query"}
            has_body = "requestBody" in operation
            anonymous = {} in (operation.get("security") or [{}])
            errors = {"401": ("Missing or invalid credentials.", "Error")}
            if method == "post":
                errors["403"] = ("Not allowed: only its owner changes it (your team's is read-only; "
                                 "a teammate's id in the body is named in `detail`), or a CSRF "
                                 "failure with session login.", "Error")
            elif not anonymous or method != "get":
                errors["403"] = ("Not allowed (or a CSRF failure with session login).", "Error")
            if method != "get" or query:
                errors["400"] = ("Invalid input.", "FieldErrors")
            if path.startswith(SHARED_PREFIX):
                errors["404"] = ("No share link with this token (or no such file for what it shows).", "Error")
                errors["410"] = ("This share link was revoked by its owner: "
                                 "`{\"detail\": \"This share link was revoked by its owner.\"}`.", "Error")
            elif "{" in path or "page" in query:
                errors["404"] = ("No such object (or not yours), or no such page.", "Error")
            if has_body:
                errors["413"] = ("Request body over DATA_UPLOAD_MAX_MEMORY_SIZE (the estimate: "
                                 "ESTIMATE_MAX_BODY_BYTES).", "FieldErrors")
                errors["415"] = ("Unsupported content type.", "Error")
            if any(p.get("in") == "header" and p["name"] == "Idempotency-Key" for p in params):
                errors["422"] = ("This Idempotency-Key was used for a different request.", "FieldErrors")
            if method == "post" and path in QUEUES_JOBS:
                errors["409"] = ("Your active runs, sweeps or plans are at their limit "
                                 "(MAX_ACTIVE_*_PER_USER).", "ActiveLimit")
            errors["429"] = ("Too many requests (THROTTLE_*_RATE): try again after Retry-After seconds.",
                             "Throttled")
            responses = operation.setdefault("responses", {})
            for status, (description, schema) in errors.items():
                responses.setdefault(status, {"description": description, "content": _ref(schema)})
    return result
