package dev.outboxinbox.inbox;

import jakarta.interceptor.InterceptorBinding;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Puts the inbox around an {@code @Incoming} method of a channel bound to the connector
 * {@code inbox-rabbitmq}: one transaction (joined if the caller has one), the message id inserted
 * into the inbox first, the method called only if that insert added it, commit; the connector acks
 * after the commit. A duplicate returns at once without calling the method, and is acked.
 *
 * <pre>{@code
 * @Incoming("inventory-replies")
 * @Blocking
 * @Inbox
 * void decide(InventoryEvent reply, InboxMetadata inbox) { ... }
 * }</pre>
 *
 * The method takes the payload its {@link MessageDecoder} makes and the {@link InboxMetadata}
 * (injected by SmallRye from the message), and runs on a worker thread ({@code @Blocking}): it does
 * JDBC. Throwing rolls everything back; the connector then tells an outage (held, retried) from a
 * message at fault (dead-lettered with the reason), and a {@link RejectedMessageException} is
 * dead-lettered at once.
 *
 * <p>On methods (on a class it would wrap every method: refused at start, as is a method without an
 * {@code InboxMetadata} parameter or without {@code @Blocking}/{@code @Transactional}: see
 * {@link InboxMethods}), rather than dead-lettering every message it gets.
 */
@InterceptorBinding
@Target({ElementType.METHOD, ElementType.TYPE})
@Retention(RetentionPolicy.RUNTIME)
public @interface Inbox {
}
