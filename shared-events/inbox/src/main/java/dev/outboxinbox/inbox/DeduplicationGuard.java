package dev.outboxinbox.inbox;

import io.quarkus.logging.Log;
import io.quarkus.runtime.StartupEvent;
import io.smallrye.config.SmallRyeConfig;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.util.List;
import org.eclipse.microprofile.config.ConfigProvider;

/**
 * Keeps the negative control's switch ({@code inbox.unsafe.disable-deduplication}) out of every
 * deployment: the service refuses to start with it unless the {@value #PROFILE} profile is active,
 * which only deploy/chaos sets ({@code INBOX_UNSAFE_DISABLE_DEDUPLICATION=true QUARKUS_PROFILE=prod,chaos}). With it on, the start is logged loudly and readiness reports it.
 */
@ApplicationScoped
public class DeduplicationGuard {

    /** The Quarkus profile of fault-injection runs: {@code QUARKUS_PROFILE=prod,chaos}. */
    public static final String PROFILE = "chaos";

    private final boolean disabled;

    DeduplicationGuard(InboxConfig config) {
        this.disabled = config.unsafe().disableDeduplication();
    }

    void onStart(@Observes StartupEvent event) {
        check(disabled, ConfigProvider.getConfig().unwrap(SmallRyeConfig.class).getProfiles());
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

    /** Whether the inbox decides (the only setting a deployment can have). */
    public boolean deduplicating() {
        return !disabled;
    }
}
