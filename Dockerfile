# One image for the API and the worker (the command picks which). TypeScript runs through tsx.
FROM node:22-slim
RUN npm install -g pnpm@10.34.9
WORKDIR /app
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml tsconfig.base.json tsconfig.json ./
COPY packages/runtime/package.json packages/runtime/
COPY packages/queue/package.json packages/queue/
COPY packages/worker/package.json packages/worker/
COPY packages/api/package.json packages/api/
COPY examples/hello/package.json examples/hello/
RUN pnpm install --frozen-lockfile
COPY . .
ENV NODE_ENV=production
CMD ["node", "--import", "tsx", "packages/api/src/main.ts"]
