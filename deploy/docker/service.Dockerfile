# syntax=docker/dockerfile:1
# One image per service, built from this repository: docker compose builds it once per service of
# deploy/catalog.yaml, with SERVICE set to the service's Maven module (a relay instance's is
# outbox-relay). The build stage does not depend on SERVICE, so its layers are built once and shared
# by all.

FROM eclipse-temurin:17-jdk AS build
WORKDIR /build
# The whole repository but what .dockerignore leaves out (build output, run state, .git): every module
# of the reactor, whichever services the catalog has.
COPY . .
# The Maven repository is a BuildKit cache: a rebuild after a code change downloads nothing.
# sharing=locked: compose builds the images at once, and two Maven runs must not write one
# repository together (a half-written artifact in the cache breaks every later build).
# Every module but the harnesses of deploy/ (system tests, chaos, benchmarks, the catalog's generator).
RUN --mount=type=cache,target=/root/.m2,sharing=locked \
    ./mvnw -B -ntp -q package -DskipTests -pl '!deploy/system-tests,!deploy/chaos,!deploy/benchmarks,!deploy/catalog'

FROM eclipse-temurin:17-jre
# curl for the compose health checks (GET /q/health/ready).
RUN apt-get update \
    && apt-get install -y --no-install-recommends curl \
    && rm -rf /var/lib/apt/lists/*
ARG SERVICE
WORKDIR /app
COPY --from=build --chown=185:0 /build/${SERVICE}/target/quarkus-app/ /app/
USER 185
# The JVM options the services are measured and tested with (deploy/local uses the same).
ENV SERVICE_JAVA_OPTS="-Xmx512m -XX:+UseSerialGC"
# exec: java is PID 1 and gets SIGTERM from docker stop, so the services shut down gracefully.
ENTRYPOINT ["sh", "-c", "exec java $SERVICE_JAVA_OPTS -jar /app/quarkus-run.jar"]
