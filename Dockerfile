# syntax=docker/dockerfile:1
# One image for every process (api, ingest, sinks, dispatcher, console): the command picks it.

# --- build: compile TypeScript to dist/ ------------------------------------------------------
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY libs libs
COPY services services
COPY bin bin
RUN npm run build

# --- runtime dependencies only ---------------------------------------------------------------
FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# --- runtime ---------------------------------------------------------------------------------
FROM node:20-bookworm-slim
ENV NODE_ENV=production APP_ENV=production HOST=0.0.0.0 \
    NODE_OPTIONS=--max-semi-space-size=32
WORKDIR /app
COPY --from=deps /app/node_modules node_modules
COPY --from=build /app/dist dist
COPY package.json ./
# package.json's bin (npx billing): without tsx in the image it runs dist/bin/console.js
COPY bin/billing.js bin/billing.js
USER node
EXPOSE 8080 8081 8082 8083
HEALTHCHECK --interval=10s --timeout=3s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.HEALTH_PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "dist/services/api/main.js"]
