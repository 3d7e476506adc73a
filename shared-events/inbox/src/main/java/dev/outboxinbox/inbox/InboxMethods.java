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
import org.eclipse.microprofile.reactive.messaging.Acknowledgment;

/**
 * Checks every {@link Inbox} method at start: a mistake in its signature would otherwise show up
 * only when messages come, each of them failing and dead-lettered. An {@code @Inbox} method needs
 * the {@link InboxMetadata} parameter (the inbox key), a worker thread (it does JDBC), calls in order
 * (not {@code @Blocking(ordered = false)}, not on virtual threads: a batch's messages share a
 * transaction, one after the other), and no {@code @Transactional} of its own (the inbox's
 * transaction is the one it runs in).
 */
@ApplicationScoped
class InboxMethods {

    private static final List<Class<? extends Annotation>> OFF_THE_EVENT_LOOP = List.of(
            io.smallrye.common.annotation.Blocking.class,
            io.smallrye.reactive.messaging.annotations.Blocking.class);

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
            io.smallrye.reactive.messaging.annotations.Blocking blocking =
                    method.getAnnotation(io.smallrye.reactive.messaging.annotations.Blocking.class);
            if ((blocking != null && !blocking.ordered())
                    || method.isAnnotationPresent(io.smallrye.common.annotation.RunOnVirtualThread.class)
                    || type.isAnnotationPresent(io.smallrye.common.annotation.RunOnVirtualThread.class)) {
                problems.add("@Inbox method " + name + " must be called in order, one message after the other"
                        + " (@Blocking, ordered): the messages of a batch share one transaction, and a partition's"
                        + " order is the order they take effect in");
            }
            Acknowledgment acknowledgment = method.getAnnotation(Acknowledgment.class);
            if (acknowledgment != null && acknowledgment.value() != Acknowledgment.Strategy.POST_PROCESSING) {
                problems.add("@Acknowledgment(" + acknowledgment.value() + ") on @Inbox method " + name + ": the inbox"
                        + " commits once the method returned, and acks after the commit (POST_PROCESSING, the default)");
            }
            if (method.isAnnotationPresent(Transactional.class) || type.isAnnotationPresent(Transactional.class)) {
                problems.add("@Transactional on @Inbox method " + name + " (or its class): the inbox runs the"
                        + " transaction, one for several messages, and the method joins it; @Transactional would"
                        + " begin another, and its writes would commit apart from the inbox row");
            }
        }
        return problems;
    }
}
