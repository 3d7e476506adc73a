package dev.outboxinbox.inbox;

import io.quarkus.logging.Log;
import io.quarkus.runtime.StartupEvent;
import io.smallrye.config.SmallRyeConfig;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.util.List;
import org.eclipse.microprofile.config.ConfigProvider;

/**
 * Keeps the negative controls' switches ({@code inbox.unsafe.disable-deduplication},
 * {@code inbox.unsafe.apply-out-of-order}) out of every deployment: the service refuses to start with
 * either unless the {@value #PROFILE} profile is active, which only deploy/chaos sets
 * ({@code INBOX_UNSAFE_DISABLE_DEDUPLICATION=true QUARKUS_PROFILE=prod,chaos}). With one on, the start
 * is logged loudly and readiness reports it.
 */
@ApplicationScoped
public class DeduplicationGuard {

    /** The Quarkus profile of fault-injection runs: {@code QUARKUS_PROFILE=prod,chaos}. */
    public static final String PROFILE = "chaos";

    private final boolean disabled;
    private final boolean outOfOrder;

    DeduplicationGuard(InboxConfig config) {
        this.disabled = config.unsafe().disableDeduplication();
        this.outOfOrder = config.unsafe().applyOutOfOrder();
    }

    void onStart(@Observes StartupEvent event) {
        List<String> profiles = ConfigProvider.getConfig().unwrap(SmallRyeConfig.class).getProfiles();
        check(disabled, profiles);
        checkOrder(outOfOrder, profiles);
        if (outOfOrder) {
            Log.warn("UNSAFE: messages are applied out of order (inbox.unsafe.apply-out-of-order, profile " + PROFILE
                    + "): batches gathered for half a second are applied in reverse. This is the fault-injection"
                    + " negative control of order.");
        }
        if (disabled) {
            Log.warn("UNSAFE: deduplication is disabled (inbox.unsafe.disable-deduplication, profile " + PROFILE
                    + "): every delivery takes effect, duplicates included. This is the fault-injection negative control.");
        }
    }

    /** @throws IllegalStateException if deduplication is off outside the chaos profile */
    static void check(boolean disabled, List<String> activeProfiles) {
        if (disabled && !activeProfiles.contains(PROFILE)) {
            throw new IllegalStateException("inbox.unsafe.disable-deduplication=true is refused outside the '" + PROFILE
                    + "' profile (active: " + activeProfiles + "): it would apply every duplicate delivery."
                    + " It exists only for deploy/chaos's negative control.");
        }
    }

    /** @throws IllegalStateException if out-of-order application is on outside the chaos profile */
    static void checkOrder(boolean outOfOrder, List<String> activeProfiles) {
        if (outOfOrder && !activeProfiles.contains(PROFILE)) {
            throw new IllegalStateException("inbox.unsafe.apply-out-of-order=true is refused outside the '" + PROFILE
                    + "' profile (active: " + activeProfiles + "): it would apply an order's events in the wrong order."
                    + " It exists only for deploy/chaos's negative control of order.");
        }
    }

    /** Whether messages are applied in order (the only setting a deployment can have). */
    public boolean inOrder() {
        return !outOfOrder;
    }

    /** Whether the inbox decides (the only setting a deployment can have). */
    public boolean deduplicating() {
        return !disabled;
    }
}
