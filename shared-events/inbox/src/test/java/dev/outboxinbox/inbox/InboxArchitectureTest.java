package dev.outboxinbox.inbox;

import static com.tngtech.archunit.base.DescribedPredicate.not;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

/**
 * The inbox is a library any consumer uses as it is: it must not know the business it serves nor
 * the events of this system. The business plugs in through {@link MessageDecoder} and
 * {@code @Inbox} method (or {@link BatchEffects}); the payload stays a type parameter. (Its pom
 * does not depend on the contract either; this rule also holds if someone adds that dependency.)
 */
class InboxArchitectureTest {

    private static final JavaClasses LIBRARY = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("dev.outboxinbox.inbox");

    @Test
    void theLibraryKnowsNothingOfThisSystem() {
        noClasses().that().resideInAPackage("dev.outboxinbox.inbox..")
                .should().dependOnClassesThat(resideInAPackage("dev.outboxinbox..")
                        .and(not(resideInAPackage("dev.outboxinbox.inbox..")))
                        .and(not(resideInAPackage("dev.outboxinbox.retention.."))))
                .because("no domain class (inventory, order) and no event of this system: the payload is the consumer's type")
                .check(LIBRARY);
    }

    @Test
    void theInboxDoesNotKnowItsTransport() {
        noClasses().that().resideInAPackage("dev.outboxinbox.inbox")
                .should().dependOnClassesThat().resideInAPackage("dev.outboxinbox.inbox.rabbitmq..")
                .because("the transport calls the inbox (submit, outcome), never the other way: another transport can replace it")
                .check(LIBRARY);
    }

    @Test
    void theLibraryIsNotEmpty() {
        // Guards the two rules above against passing on nothing (a package renamed, classes not found).
        org.assertj.core.api.Assertions.assertThat(LIBRARY.stream().map(c -> c.getSimpleName()))
                .contains("InboxHandler", "InboxBatcher", "InboxConsumer", "MessageClassifier");
    }
}
