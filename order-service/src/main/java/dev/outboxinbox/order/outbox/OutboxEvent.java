package dev.outboxinbox.order.outbox;

import io.quarkus.hibernate.orm.panache.PanacheEntityBase;
import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;
import java.time.Instant;
import java.util.UUID;
import org.hibernate.annotations.JdbcTypeCode;
import org.hibernate.type.SqlTypes;

/** One row of the outbox: an event waiting in the WAL for outbox-relay. Insert-only. */
@Entity
@Table(name = "outbox")
public class OutboxEvent extends PanacheEntityBase {

    @Id
    public UUID id;

    @Column(name = "aggregatetype", nullable = false)
    public String aggregateType;

    @Column(name = "aggregateid", nullable = false)
    public String aggregateId;

    @Column(nullable = false)
    public String type;

    @Column(name = "schema_version", nullable = false)
    public int schemaVersion;

    @JdbcTypeCode(SqlTypes.JSON)
    @Column(nullable = false, columnDefinition = "jsonb")
    public String payload;

    @Column
    public String traceparent;

    @Column(name = "occurred_at", nullable = false)
    public Instant occurredAt;
}
