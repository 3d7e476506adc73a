package dev.outboxinbox.inbox;

import io.quarkus.logging.Log;
import io.quarkus.runtime.StartupEvent;
import io.smallrye.common.annotation.NonBlocking;
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
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.function.Function;
import org.eclipse.microprofile.reactive.messaging.Acknowledgment;

/**
 * Checks every {@link Inbox} method at start: a mistake in its signature would otherwise show up
 * only when messages come, each of them failing and dead-lettered. An {@code @Inbox} method needs
 * the {@link InboxMetadata} parameter (the inbox key), {@code @NonBlocking} (called on the inbox
 * channel's own thread, in order: not handed to a worker pool, not to virtual threads), and no
 * {@code @Transactional} of its own (the inbox's transaction is the one it runs in).
 */
@ApplicationScoped
class InboxMethods {

    /** What would make SmallRye hand each call to another thread: a worker pool, or a virtual thread. */
    private static final List<Class<? extends Annotation>> HANDED_OFF = List.of(
            io.smallrye.common.annotation.Blocking.class,
            io.smallrye.reactive.messaging.annotations.Blocking.class,
            io.smallrye.common.annotation.RunOnVirtualThread.class);

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
        return problems(type, IncomingChannels::of);
    }

    /** @param channelsOf the channels a method reads (its {@code @Incoming} values) */
    static List<String> problems(Class<?> type, Function<Method, List<String>> channelsOf) {
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
            // Quarkus decides where SmallRye calls the method: the method's annotation, else its class's, else a
            // void (blocking) signature means a worker pool. The inbox channel's own thread is where it belongs.
            boolean handedOff = HANDED_OFF.stream().anyMatch(method::isAnnotationPresent);
            boolean nonBlocking = method.isAnnotationPresent(NonBlocking.class)
                    || (type.isAnnotationPresent(NonBlocking.class) && !handedOff);
            if (handedOff || (!nonBlocking && HANDED_OFF.stream().anyMatch(type::isAnnotationPresent))) {
                problems.add("@Inbox method " + name + " must not be @Blocking or @RunOnVirtualThread (on it or its"
                        + " class): the inbox channel calls it on its own thread, one message after the other, where it"
                        + " may block (it is not an event loop); a worker or a virtual thread would cost two thread"
                        + " hand-offs a message, and the calls must stay in order (a batch's messages share one"
                        + " transaction, and a partition's order is the order they take effect in). Mark it @NonBlocking");
            } else if (!nonBlocking) {
                problems.add("@Inbox method " + name + " needs @NonBlocking (io.smallrye.common.annotation): the inbox"
                        + " channel calls it on its own thread, where it may block (it is not an event loop); without it"
                        + " SmallRye would hand every message to a worker thread and back, and under load the hand-offs"
                        + " cost more than the call");
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
        if (InboxLookahead.class.isAssignableFrom(type) && !type.isInterface()) {
            List<String> channels = Arrays.stream(type.getDeclaredMethods()).filter(method -> method.isAnnotationPresent(Inbox.class))
                    .flatMap(method -> channelsOf.apply(method).stream()).distinct().sorted().toList();
            if (channels.isEmpty()) {
                problems.add(type.getName() + " is an InboxLookahead without an @Incoming @Inbox method of its own: the inbox"
                        + " channel looks ahead through the bean whose method it calls, so this look would never be taken");
            } else if (channels.size() > 1) {
                problems.add(type.getName() + " is an InboxLookahead beside @Inbox methods of several channels " + channels
                        + ": its one look would be given every channel's payloads; put each channel's method (and its look)"
                        + " in a bean of its own");
            }
        }
        return problems;
    }
}
