package dev.outboxinbox.inbox;

import io.quarkus.arc.Arc;
import io.quarkus.arc.InstanceHandle;
import jakarta.enterprise.inject.Any;
import jakarta.persistence.EntityManager;
import java.util.ArrayList;
import java.util.List;

/**
 * Where the service has Hibernate ORM: its session of a channel's transaction is opened on the
 * channel's thread, the one that commits or rolls the transaction back, not on the worker thread of
 * the first {@code @Inbox} method that touches it. Hibernate remembers the thread its session joined
 * the transaction on, and takes a rollback from any other thread for the transaction reaper's: it
 * puts its end of the transaction off ("HHH90007020: Transaction afterCompletion called by a
 * background thread; delaying afterCompletion processing") until the session is used again on that
 * thread, which it never is. Opened here, every method of the batch joins the same session (it is the
 * transaction's), and its end is handled at once.
 *
 * <p>Not a bean, and touches {@code jakarta.persistence} only where it is on the class path: the
 * library itself needs no Hibernate. Every persistence unit's session is opened, not only the default's.
 */
final class HibernateSessions {

    private static final boolean PRESENT = present();
    /**
     * The persistence units' EntityManagers (proxies to the current transaction's sessions), looked up
     * once per application: a field of the inbox's bean, not static (a library's class outlives a
     * dev-mode restart, and its container).
     */
    private volatile List<EntityManager> entityManagers;

    /** Joins every persistence unit of the service to the current thread's transaction (none: nothing). */
    void openOnThisThread() {
        if (!PRESENT) {
            return;
        }
        List<EntityManager> known = entityManagers;
        if (known == null) {
            known = new ArrayList<>();
            for (InstanceHandle<EntityManager> unit : Arc.container().select(EntityManager.class, Any.Literal.INSTANCE).handles()) {
                known.add(unit.get());
            }
            entityManagers = known;
        }
        known.forEach(EntityManager::joinTransaction);
    }

    private static boolean present() {
        try {
            Class.forName("jakarta.persistence.EntityManager", false, HibernateSessions.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError absent) {
            return false;
        }
    }
}
