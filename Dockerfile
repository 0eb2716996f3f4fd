# leasehold in a container: the npm package, built here and installed into a
# slim runtime image. Non-root, the database on a volume, tokens from the
# environment (the server refuses to bind 0.0.0.0 without both).
#   docker build -t leasehold .
#   docker run -p 8787:8787 -v leasehold-data:/data \
#     -e LEASEHOLD_WORKER_TOKEN=... -e LEASEHOLD_ADMIN_TOKEN=... leasehold
FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
# Scripts skipped: the build needs only typescript, not workerd, bun or deno.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
RUN npm pack --pack-destination /pkg && mv /pkg/leasehold-*.tgz /pkg/leasehold.tgz

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /pkg/leasehold.tgz /tmp/leasehold.tgz
RUN npm install --omit=dev --no-audit --no-fund /tmp/leasehold.tgz \
  && rm /tmp/leasehold.tgz && npm cache clean --force \
  && mkdir /data && chown node:node /data
USER node
ENV LEASEHOLD_HOST=0.0.0.0 \
    LEASEHOLD_PORT=8787 \
    LEASEHOLD_DATABASE_URL=file:/data/leasehold.db
VOLUME /data
EXPOSE 8787
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8787/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["/app/node_modules/.bin/leasehold"]
CMD ["serve"]
