package dev.outboxinbox.inbox;

import jakarta.enterprise.context.ApplicationScoped;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentSkipListSet;

/**
 * The names this service's messages are kept under in the inbox, one per stream it reads (each inbox
 * channel's, or the {@link BatchEffects} service's one), as the transport opens them: what
 * {@link InboxPurge} forgets the old message ids of. Another service's rows in a shared database are its own.
 */
@ApplicationScoped
public class ConsumerNames {

    private final Set<String> names = new ConcurrentSkipListSet<>();

    /** The transport reads a stream kept under {@code consumer}. */
    public void add(String consumer) {
        names.add(consumer);
    }

    public List<String> all() {
        return List.copyOf(names);
    }
}
