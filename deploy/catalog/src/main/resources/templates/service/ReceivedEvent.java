package {{package}};

import io.quarkus.hibernate.orm.panache.PanacheEntityBase;
import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;
import java.time.Instant;
import java.util.UUID;

/** The placeholder effect (V1__received_events.sql): an event {{name}} took into account, once. */
@Entity
@Table(name = "received_events")
public class ReceivedEvent extends PanacheEntityBase {

    @Id
    @Column(name = "event_id")
    public UUID eventId;

    @Column(name = "event_type")
    public String eventType;

    @Column(name = "aggregate_id")
    public String aggregateId;

    @Column(name = "received_at")
    public Instant receivedAt;
}
