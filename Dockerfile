# tierlab: one image for web (gunicorn) and worker (celery); see docker-compose.yml.

# ---- front end: Vite writes frontend/dist with .vite/manifest.json
FROM node:20-bookworm-slim AS frontend
WORKDIR /app/frontend
COPY frontend/package.json frontend/package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY frontend/ ./
RUN npm run build

# ---- Python app (and the engine's C extension, built by pip)
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . .
COPY --from=frontend /app/frontend/dist frontend/dist
RUN pip install --no-cache-dir -e . \
 && useradd --create-home --uid 1000 tierlab \
 && mkdir -p var staticfiles && chown -R tierlab var staticfiles
USER tierlab
# gunicorn reads WEB_CONCURRENCY (processes) and GUNICORN_CMD_ARGS itself, and gunicorn.conf.py
# (WEB_MAX_REQUESTS, WEB_MAX_MEMORY_KIB: a process is replaced after that many requests or
# one that left it above that resident memory) from /app.
ENV DEBUG=0 WEB_CONCURRENCY=3
EXPOSE 8000
CMD ["gunicorn", "tierlab.wsgi", "--bind", "0.0.0.0:8000", "--access-logfile", "-"]
