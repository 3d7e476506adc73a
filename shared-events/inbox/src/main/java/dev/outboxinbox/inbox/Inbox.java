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
 * @NonBlocking
 * @Inbox
 * void decide(InventoryEvent reply, InboxMetadata inbox) { ... }
 * }</pre>
 *
 * The method takes the payload its {@link MessageDecoder} makes and the {@link InboxMetadata}
 * (injected by SmallRye from the message). It does JDBC, and runs on the inbox channel's own
 * thread, where blocking is fine (it is not an event loop): {@code @NonBlocking} tells SmallRye to call
 * it there, one message after the other, rather than hand each message to a worker thread and back
 * (Quarkus's default for a {@code void} method, refused: under load the two hand-offs a message cost
 * more than the call). Throwing rolls everything back; the connector then tells an outage (held, retried) from a
 * message at fault (dead-lettered with the reason), and a {@link RejectedMessageException} is
 * dead-lettered at once.
 *
 * <p>On methods (on a class it would wrap every method: refused at start, as is a method without an
 * {@code InboxMetadata} parameter, without {@code @NonBlocking} or with {@code @Transactional}: see
 * {@link InboxMethods}), rather than dead-lettering every message it gets.
 */
@InterceptorBinding
@Target({ElementType.METHOD, ElementType.TYPE})
@Retention(RetentionPolicy.RUNTIME)
public @interface Inbox {
}
