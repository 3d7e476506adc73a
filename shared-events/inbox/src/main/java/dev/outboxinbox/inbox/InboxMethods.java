package dev.outboxinbox.inbox;

import io.quarkus.logging.Log;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.enterprise.inject.Any;
import jakarta.enterprise.inject.spi.Bean;
import jakarta.enterprise.inject.spi.BeanManager;
import jakarta.interceptor.Interceptor;
import jakarta.transaction.Transactional;
import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * Checks every {@link Inbox} method at start: a mistake in its signature would otherwise show up
 * only when messages come, each of them failing and dead-lettered. An {@code @Inbox} method needs
 * the {@link InboxMetadata} parameter (the inbox key) and a worker thread (it does JDBC).
 */
@ApplicationScoped
class InboxMethods {

    private static final List<Class<? extends Annotation>> OFF_THE_EVENT_LOOP = List.of(
            io.smallrye.common.annotation.Blocking.class,
            io.smallrye.reactive.messaging.annotations.Blocking.class,
            io.smallrye.common.annotation.RunOnVirtualThread.class,
            Transactional.class);

    void check(@Observes StartupEvent event, BeanManager beans) {
        List<String> problems = new ArrayList<>();
        List<String> methods = new ArrayList<>();
        Set<Bean<?>> all = beans.getBeans(Object.class, Any.Literal.INSTANCE);
        for (Bean<?> bean : all) {
            Class<?> type = bean.getBeanClass();
            try {
                problems.addAll(problems(type));
                for (Method method : type.getDeclaredMethods()) {
                    if (method.isAnnotationPresent(Inbox.class)) {
                        methods.add(type.getSimpleName() + "." + method.getName());
                    }
                }
            } catch (LinkageError e) {
                // A framework bean whose methods name an optional class that is absent: not ours to check.
                Log.debugf("not checked for @Inbox methods: %s (%s)", type.getName(), e);
            }
        }
        if (!problems.isEmpty()) {
            throw new IllegalStateException(String.join("; ", problems));
        }
        if (!methods.isEmpty()) {
            Log.infof("The inbox is around %s", String.join(", ", methods));
        }
    }

    /** What is wrong with the {@code @Inbox} methods of this class; empty if nothing. */
    static List<String> problems(Class<?> type) {
        List<String> problems = new ArrayList<>();
        if (type.isAnnotationPresent(Inbox.class) && !type.isAnnotationPresent(Interceptor.class)) {
            problems.add("@Inbox on the class " + type.getName() + ": put it on the @Incoming method (on a class it"
                    + " would wrap every method)");
        }
        for (Method method : type.getDeclaredMethods()) {
            if (!method.isAnnotationPresent(Inbox.class)) {
                continue;
            }
            String name = type.getName() + "." + method.getName();
            if (!List.of(method.getParameterTypes()).contains(InboxMetadata.class)) {
                problems.add("@Inbox method " + name + " needs an InboxMetadata parameter after the payload"
                        + " (the inbox key: without it no message could be deduplicated)");
            }
            if (OFF_THE_EVENT_LOOP.stream().noneMatch(method::isAnnotationPresent)) {
                problems.add("@Inbox method " + name + " needs @Blocking (it runs a database transaction:"
                        + " not on the event loop)");
            }
        }
        return problems;
    }
}
