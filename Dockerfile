# One image for every docshare service (compose picks the service with `command`; the default is
# embedded mode, everything in one process). Node 24 runs the TypeScript sources directly
# (type stripping), so there is no build step: the runtime stage is the sources plus
# production dependencies.
FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY libs ./libs
COPY services ./services
# The `node` devDependency (Node 24 from npm, for machines without it) is not needed here.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production PORT=8080 DATA_DIR=/data
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY libs ./libs
COPY services ./services
COPY infra ./infra
RUN mkdir -p /data /var/spool/docshare && chown node:node /data /var/spool/docshare
USER node
EXPOSE 8080
VOLUME ["/data"]
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=5 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "services/standalone/src/main.ts"]
